"""Checkpoints that a restarted job resumes from: rank 0 writes atomically, every rank agrees on the step.

    import lightcc.checkpoint as ckpt
    start = ckpt.load(DIR, model=model, optimizer=opt, sampler=sampler)   # None on a fresh start
    ...
    ckpt.save(DIR, step, model=model, optimizer=opt, sampler=sampler, extra={"epoch": epoch})

A checkpoint is the directory ``DIR/step-<N>``. ``save`` is collective: every rank writes its
own part (its RNG states and, with LIGHT_TOPK_ALLREDUCE, its top-k residuals: they differ per
rank) into ``DIR/.step-<N>.tmp``; after a barrier rank 0 writes the shared part (model,
optimizer, the sampler's processed samples of all ranks, `extra`) and renames the directory into
place, so a step directory is always complete (a crash mid-save leaves only a ``.tmp``). ``load``
is collective too: each rank finds its newest complete step and all take the smallest (the
newest step every rank can read). ``DIR`` must be one directory every rank sees (a shared file
system across hosts). Objects are pickled (torch tensors included); the module imports no
framework itself and uses the NumPy front for its collectives.
"""
from __future__ import annotations

import os
import pickle
import random
import re
import shutil
import sys
from typing import Any, Dict, List, Optional

import numpy as np

import lightcc.numpy as _hvd
from lightcc.common.basics import rank, size

_STEP_RE = re.compile(r"^step-(\d+)$")
SHARED = "shared.pkl"


def _rank_file(r: int) -> str:
    return f"rank-{r}.pkl"


def complete_steps(directory: str) -> List[int]:
    """Steps with a complete checkpoint in `directory` (this rank's view), ascending."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    steps = []
    for name in names:
        m = _STEP_RE.match(name)
        if m and os.path.exists(os.path.join(directory, name, SHARED)):
            steps.append(int(m.group(1)))
    return sorted(steps)


def latest_step(directory: str) -> Optional[int]:
    """The newest step every rank sees complete (collective), or None."""
    steps = complete_steps(directory)
    mine = np.array([steps[-1] if steps else -1], dtype=np.int64)
    agreed = int(_hvd.allreduce(mine, op=_hvd.Min, name="checkpoint.latest")[0])
    return agreed if agreed >= 0 else None


def _rng_state() -> Dict[str, Any]:
    state: Dict[str, Any] = {"random": random.getstate(), "numpy": np.random.get_state()}
    torch = sys.modules.get("torch")
    if torch is not None:
        state["torch"] = torch.get_rng_state()
    return state


def _set_rng_state(state: Dict[str, Any]) -> None:
    random.setstate(state["random"])
    np.random.set_state(state["numpy"])
    torch = sys.modules.get("torch")
    if torch is not None and "torch" in state:
        torch.set_rng_state(state["torch"])


def _topk_residuals() -> Dict[str, np.ndarray]:
    from lightcc.common.topk_state import topk_state_dict

    try:
        return topk_state_dict()
    except (AttributeError, RuntimeError, ValueError):
        return {}


def _write(path: str, obj: Any) -> None:
    with open(path, "wb") as handle:
        pickle.dump(obj, handle, protocol=4)
        handle.flush()
        os.fsync(handle.fileno())


def _sampler_state(sampler: Any) -> Optional[Dict[str, Any]]:
    """The sampler's state with every rank's processed samples merged (collective)."""
    if sampler is None:
        return None
    state = dict(sampler.state_dict())
    if "processed_indices" in state:
        mine = np.array(sorted(state["processed_indices"]), dtype=np.int64)
        everyone = _hvd.allgather(mine, name="checkpoint.sampler")
        state["processed_indices"] = {int(i) for i in everyone}
    return state


def save(directory: str, step: int, model: Any = None, optimizer: Any = None, sampler: Any = None,
         extra: Optional[Dict[str, Any]] = None, keep: int = 2) -> str:
    """Write checkpoint `step` (collective; every rank calls it); returns its directory.

    `model` and `optimizer` are anything with state_dict() (rank 0's are saved: data-parallel
    ranks hold the same), `sampler` an ElasticSampler-like object whose processed samples are
    merged over ranks, `extra` any picklable dict. The `keep` newest steps are kept.
    """
    final = os.path.join(directory, f"step-{step}")
    tmp = os.path.join(directory, f".step-{step}.tmp")
    sampler_state = _sampler_state(sampler)
    if rank() == 0:
        os.makedirs(directory, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
    _barrier("checkpoint.mkdir")
    _write(os.path.join(tmp, _rank_file(rank())), {"rng": _rng_state(), "topk": _topk_residuals()})
    _barrier("checkpoint.parts")
    if rank() == 0:
        shared = {"step": step, "size": size(), "extra": extra or {}, "sampler": sampler_state,
                  "model": model.state_dict() if model is not None else None,
                  "optimizer": optimizer.state_dict() if optimizer is not None else None}
        _write(os.path.join(tmp, SHARED), shared)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        for old in complete_steps(directory)[:-keep] if keep > 0 else []:
            shutil.rmtree(os.path.join(directory, f"step-{old}"), ignore_errors=True)
    _barrier("checkpoint.done")
    return final


def load(directory: str, model: Any = None, optimizer: Any = None, sampler: Any = None,
         step: Optional[int] = None) -> Optional[Dict[str, Any]]:
    """Restore the newest step every rank sees (collective); returns {"step", "extra"} or None if there is none.

    RNG states and top-k residuals are this rank's own when the job has as many ranks as when it
    was saved; otherwise rank 0's RNG state is used and residuals start from zero.
    """
    step = latest_step(directory) if step is None else step
    if step is None:
        return None
    where = os.path.join(directory, f"step-{step}")
    with open(os.path.join(where, SHARED), "rb") as handle:
        shared = pickle.load(handle)
    if model is not None and shared["model"] is not None:
        model.load_state_dict(shared["model"])
    if optimizer is not None and shared["optimizer"] is not None:
        optimizer.load_state_dict(shared["optimizer"])
    if sampler is not None and shared["sampler"] is not None:
        sampler.load_state_dict(shared["sampler"])
    same_world = shared["size"] == size()
    part = os.path.join(where, _rank_file(rank() if same_world else 0))
    if os.path.exists(part):
        with open(part, "rb") as handle:
            mine = pickle.load(handle)
        _set_rng_state(mine["rng"])
        if same_world and mine["topk"]:
            from lightcc.common.topk_state import load_topk_state_dict

            load_topk_state_dict(mine["topk"])
    return {"step": shared["step"], "extra": shared["extra"]}


def _barrier(name: str) -> None:
    _hvd.allreduce(np.zeros(1, dtype=np.int32), op=_hvd.Sum, name=name)
