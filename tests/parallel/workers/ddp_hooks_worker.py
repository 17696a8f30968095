"""Trains the digits residual CNN under DDP with lightcc's communication hooks and prints one RESULT line per run.

argv: port of torch's TCPStore, backend (gloo or lightcc), mode, then mode arguments.

- ``train EPOCHS SEEDS SETTINGS...``: for each seed (comma list) and setting — ``dense`` (DDP's own
  allreduce, no hook), ``allreduce``, ``fp16``, ``bf16``, ``topk:<ratio>`` (declared optimizer),
  ``topk-state:<ratio>`` (momentum given to the state, optimizer without momentum),
  ``topk-plain:<ratio>`` (nothing declared) — a fresh process group (and engine) trains and rank
  0 prints the test accuracy, whether every rank ended with identical weights, and which engine
  tensors top-k compressed. ``static`` after a setting's name (``topk:0.01/static``) builds DDP
  with static_graph=True.
- ``full STEPS``, ``save STEPS DIR``, ``resume STEPS DIR``: top-k 1 % with a declared optimizer;
  ``save`` writes each rank's model, optimizer and pickled hook state after STEPS, ``resume`` loads
  them in a new process (a fresh engine) and trains to ``full``'s STEPS; all print the weights' digest.

Recipe: SGD Nesterov momentum 0.9, lr 0.1 cosine-decayed per step, weight decay 1e-4, 32 images per
rank per step, DDP buckets of 10 KB (several buckets: the CNN's convs are 9 KiB each).
"""
from __future__ import annotations

import gc
import json
import math
import os
import pickle
import sys
from datetime import timedelta
from pathlib import Path

import common  # noqa: F401  (puts the repo on sys.path)
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import lightcc.torch  # noqa: F401  (registers the "lightcc" backend)
from benchmarks.quality.digits import accuracy, load_split, param_digest, residual_cnn
from lightcc.common import basics
from lightcc.common.topk_state import topk_state_dict
from lightcc.torch import ddp_hooks

R, N = int(os.environ["LIGHTCC_RANK"]), int(os.environ["LIGHTCC_SIZE"])
PORT, BACKEND = int(sys.argv[1]), sys.argv[2]
WIDTH, BATCH, LR, WD, MOMENTUM = 16, 32, 0.1, 1e-4, 0.9
TOPK_ENV = ("LIGHT_TOPK_ALLREDUCE", "LIGHT_TOPK_DENSITY")
_STORE: list = []  # torch's store for every run of this process, then one entry per run started


def start(setting: str) -> None:
    """A fresh group; over the lightcc backend top-k's flags go in the environment before it starts."""
    for k in TOPK_ENV:
        os.environ.pop(k, None)
    kind, _, ratio = setting.partition(":")
    if BACKEND == "lightcc" and kind.startswith("topk"):
        os.environ.update({"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_DENSITY": ratio.split("/")[0]})
    # One TCPStore for the process, a prefix per run: a rank that starts the next run while its peer
    # still tears down the last one must not read that run's keys (or reach its closing store).
    if not _STORE:
        _STORE.append(dist.TCPStore("127.0.0.1", PORT, N, R == 0, timeout=timedelta(seconds=60)))
    _STORE.append(None)
    dist.init_process_group(BACKEND, store=dist.PrefixStore(f"run{len(_STORE)}/", _STORE[0]), rank=R, world_size=N,
                            timeout=timedelta(seconds=60))


def stop(run: "Run | None") -> None:
    """Ends a run's group. DDP goes first: a Reducer that outlived the group would destroy gloo's group
    holding the GIL, joining a gloo thread that needs the GIL to free a finished work's tensors (a
    deadlock seen in CI, pytorch/pytorch#56297); the group's own wrapper releases it."""
    if run is not None:
        run.ddp = None
        gc.collect()
    dist.destroy_process_group()
    if basics.is_initialized():  # over gloo the hook state started lightcc's engine
        basics.shutdown()


class Run:
    """One DDP training run of the recipe under `setting` (the group is up)."""

    def __init__(self, setting: str, seed: int, epochs: int, hook: bool = True) -> None:
        self.setting, self.seed = setting, seed
        name, _, flags = setting.partition("/")
        kind, _, ratio = name.partition(":")
        self.xtr, self.ytr, self.xte, self.yte = load_split()
        self.model = residual_cnn(WIDTH, seed)
        self.ddp = DDP(self.model, bucket_cap_mb=0.01, static_graph="static" in flags)
        momentum = 0.0 if kind == "topk-state" else MOMENTUM
        self.opt = torch.optim.SGD(self.model.parameters(), lr=LR, momentum=momentum, nesterov=momentum > 0,
                                   weight_decay=WD)
        self.state = None
        if not hook:
            pass
        elif kind == "allreduce":
            self.state = ddp_hooks.LightccState(prefix="digits")
            self.ddp.register_comm_hook(self.state, ddp_hooks.allreduce_hook)
        elif kind in ("fp16", "bf16"):
            self.state = ddp_hooks.LightccState(prefix="digits")
            hook = ddp_hooks.fp16_compress_hook if kind == "fp16" else ddp_hooks.bf16_compress_hook
            self.ddp.register_comm_hook(self.state, hook)
        elif kind.startswith("topk"):
            r = float(ratio)
            if kind == "topk-state":
                self.state = ddp_hooks.TopkState(ratio=r, momentum=MOMENTUM, nesterov=True, prefix="digits")
            else:
                self.state = ddp_hooks.TopkState(ratio=r, prefix="digits")
                if kind == "topk":
                    self.state.declare_optimizer(self.opt)
            self.ddp.register_comm_hook(self.state, ddp_hooks.topk_hook)
        elif kind != "dense":
            raise ValueError(f"unknown setting {setting!r}")
        self.steps_per_epoch = len(self.ytr) // (BATCH * N)
        self.total = self.steps_per_epoch * epochs
        self.step_count = 0
        self.loss = torch.nn.CrossEntropyLoss()

    def train_until(self, steps: int) -> None:
        while self.step_count < min(steps, self.total):
            epoch, s = divmod(self.step_count, self.steps_per_epoch)
            perm = torch.randperm(len(self.ytr), generator=torch.Generator().manual_seed(1000 * self.seed + epoch))
            idx = perm[(s * N + R) * BATCH:(s * N + R + 1) * BATCH]
            for g in self.opt.param_groups:
                g["lr"] = LR * 0.5 * (1.0 + math.cos(math.pi * self.step_count / self.total))
            self.opt.zero_grad()
            self.loss(self.ddp(self.xtr[idx]), self.ytr[idx]).backward()
            self.opt.step()
            self.step_count += 1

    def identical(self) -> bool:
        digests = [None] * N
        dist.all_gather_object(digests, param_digest(self.model))
        return len(set(digests)) == 1


def train(epochs: int, seeds: str, settings: list) -> None:
    for seed in (int(s) for s in seeds.split(",")):
        for setting in settings:
            start(setting)
            run = None
            try:
                run = Run(setting, seed, epochs)
                run.train_until(run.total)
                acc = accuracy(run.model, run.xte, run.yte)
                compressed = sorted(k for k in topk_state_dict() if not k.startswith("velocity:")) \
                    if basics.is_initialized() else []
                velocities = sorted(k for k in topk_state_dict() if k.startswith("velocity:")) \
                    if basics.is_initialized() else []
                row = {"setting": setting, "seed": seed, "backend": BACKEND, "accuracy": acc,
                       "identical": run.identical(), "compressed": compressed, "velocities": velocities,
                       "steps": run.step_count}
            finally:
                stop(run)
            if R == 0:
                print("RESULT " + json.dumps(row), flush=True)


def checkpointed(mode: str, steps: int, where: str) -> None:
    setting, total_epochs = "topk:0.01", 3
    start(setting)
    run = None
    try:
        run = Run(setting, 1, total_epochs, hook=mode != "resume")
        path = Path(where) / f"rank{R}.pt" if where else None
        if mode == "resume":
            saved = torch.load(path, weights_only=False)
            run.model.load_state_dict(saved["model"])
            run.opt.load_state_dict(saved["opt"])
            state = pickle.loads(saved["hook"])
            if os.environ.get("DDP_HOOKS_DROP_RESIDUALS") == "1":  # the negative control
                state.load_state_dict({**state.state_dict(), "residuals": {}})
            state.declare_optimizer(run.opt)
            run.state = state
            run.ddp.register_comm_hook(state, ddp_hooks.topk_hook)
            run.step_count = saved["step"]
        else:
            run.train_until(steps)
        if mode == "save":
            torch.save({"model": run.model.state_dict(), "opt": run.opt.state_dict(),
                        "hook": pickle.dumps(run.state), "step": run.step_count}, path)
            residuals = len(run.state.state_dict()["residuals"])
        else:
            run.train_until(run.total)
            residuals = None
        row = {"mode": mode, "digest": param_digest(run.model), "identical": run.identical(),
               "steps": run.step_count, "residuals": residuals}
    finally:
        stop(run)
    if R == 0:
        print("RESULT " + json.dumps(row), flush=True)


def leave() -> None:
    """Rank 0 serves torch's store, which a peer's teardown may still use: it leaves last (as
    lightcc/bench/torch_group.py), once every rank has said it is out."""
    if not _STORE:
        return
    _STORE[0].set(f"left/{R}", "1")
    if R == 0:
        _STORE[0].wait([f"left/{r}" for r in range(N)], timedelta(seconds=120))


def main() -> None:
    torch.set_num_threads(1)
    mode = sys.argv[3]
    if mode == "train":
        train(int(sys.argv[4]), sys.argv[5], sys.argv[6:])
    else:
        checkpointed(mode, int(sys.argv[4]), sys.argv[5] if len(sys.argv) > 5 else "")
    leave()


if __name__ == "__main__":
    main()
