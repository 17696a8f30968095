"""Published raw data: the commits of main's history that hold it, and a checkout of it beside this one.

    python -m benchmarks.archive checkout [DIR]     # every archived file, under DIR (../lightcc-results)
    python -m benchmarks.archive show PATH          # one file, as `results:PATH` in the docs names it
    python -m benchmarks.archive list               # the archives and what each holds

Raw data never sits in this tree: a publishing commit adds a run's files under
`benchmarks/<suite>/results/<run>/` and the very next commit removes them again, so they live in
main's history only; that commit's hash goes into ARCHIVES. `results:PATH` in the docs names a
file or folder of the newest archive that holds it (docs/results.md says why not a branch).
"""
from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Dict, List, Optional

from benchmarks.output import RESULTS_CHECKOUT

ROOT = Path(__file__).resolve().parents[1]

# Oldest first: commit -> what it archived. A path in several archives resolves to the newest.
ARCHIVES: Dict[str, str] = {
    "1626ac7": "every run published while results were kept in the tree (sessions 1-17), as they were "
               "when they left it",
    "ab11d80": "session 19: DDP over gloo and lightcc and lightcc's DistributedOptimizer against the compute "
               "bound (benchmarks/ddp/results/s19/), PyTorch's suite on gloo and lightcc "
               "(benchmarks/compat/results/torch-suite-s19/)",
    "07335ca": "session 19: the no-op collective added by docs/design.md's checklist, as a patch with its "
               "file count (benchmarks/anatomy/results/noop-collective/)",
    "c9895c7": "session 22: the ETTR race of lightcc elastic DDP, torchrun restarts and torchft 0.2.0 on emulated "
               "hosts (benchmarks/elastic/results/ettr-s22/)",
    "152e07f": "session 22: the ETTR race again after the background commit copy and TCP_NODELAY, on a quiet "
               "machine (benchmarks/elastic/results/ettr-s22b/)",
    "b4b9cbd": "session 23: standby drivers, the leader's host lost (benchmarks/elastic/results/driver-loss-s23/) "
               "and the ETTR race with a driver on every host (benchmarks/elastic/results/ettr-s23-nomaster/)",
    "c6ce610": "session 23: DiLoCo against DDP at equal tokens, H = 50, outer optimizers, warm-ups and inner lr "
               "schedules, three seeds (benchmarks/lowcomm/results/diloco-s23/)",
    "ef6eca3": "session 26: the low-communication race on emulated hosts, DDP, lightcc's DiLoCo variants and "
               "torchft's DiLoCo; the idle-polling A/B (benchmarks/lowcomm/results/race-s26/)",
    "6344c2b": "session 27: the idle-polling A/B in alternating rounds, DDP over lightcc and gloo at 1 Gbit/s "
               "(benchmarks/lowcomm/results/idle-ab-s27/)",
    "dd85741": "session 23: what a commit every step costs with copies and with live commits, 1 and 2 ranks "
               "(benchmarks/elastic/results/commit-cost-s23/)",
    "365f008": "session 23: the commit cost again, each pair led by a step in its own mode "
               "(benchmarks/elastic/results/commit-cost-s23b/)",
    "718c56a": "session 24: issue 44's busbw and DDP table on emulated hosts with the defaults, after the "
               "pipelined ring; the engine before/after (benchmarks/engine/results/s24-defaults/)",
    "2a349ea": "session 25: the 2D allgather, a real collective, as a patch with its file count "
               "(benchmarks/anatomy/results/hier-allgather-s25/)",
    "ce9837f": "session 25: one host against the bound with the TF front, DDP at 2x1 before/after, the engine "
               "before/after (benchmarks/engine/results/s25/), HARP's adaptive flows "
               "(benchmarks/harp/results/flows-s25/), Horovod's suites (benchmarks/compat/results/horovod-s25/)",
    "44fc93a": "session 28: streaming DiLoCo at 1 Gbit/s over 3 seeds, quantised DiLoCo at 4 hosts in the "
               "reduce-scatter form, PowerSGD and the top-k hook in the race (benchmarks/lowcomm/results/s28/); "
               "issue 44's table with the defaults and the 2D reducescatter (benchmarks/engine/results/s28-defaults/); "
               "one host's knobs and the cross-memory attempt (benchmarks/engine/results/s28/onehost-knobs/)",
    "ac7bf16": "session 29: the pipelined ring reducescatter before/after and the 2D reducescatter against the "
               "flat ring and gloo (benchmarks/engine/results/s29/)",
    "ebd5d5c": "session 29: SparseLoCo's codec in the race, its settings on seed 0 and its defaults against DiLoCo "
               "over 3 seeds (benchmarks/lowcomm/results/s29/)",
    "a88bbff": "session 29: the reducescatter after staging chunk by chunk into a kept work area, 2x1 and 2x2 "
               "against gloo (benchmarks/engine/results/s29/rs-kept/)",
    "c288876": "session 30: the GPU checks at commit 90ce733 on an H100 under MPS "
               "(benchmarks/gpu/results/2026-11-27-h100-mps/)",
    "843faa5": "session 30: one host against the compute bound, torch and TF fronts, and the 2D "
               "reducescatter's in-place ring A/B (benchmarks/engine/results/s30/)",
    "25e7b0b": "session 30: DiLoCo, torchft and sparseloco at 4 emulated hosts, 3 seeds; sparseloco's density, "
               "outer lr and reduce-scatter form (benchmarks/lowcomm/results/s30/)",
    "66abbba": "session 31: sparseloco with Elias-Fano indices at 4 and 2 emulated hosts, density 0.08 and 0.1, "
               "3 seeds (benchmarks/lowcomm/results/s31/)",
    "094cb78": "session 31: int8 and int4 outer steps at 4 emulated hosts, seeds 1 and 2 "
               "(benchmarks/lowcomm/results/s31-int/)",
    "95f3f3c": "session 32: the GPU checks at 87cba93 on one H200 under MPS "
               "(benchmarks/gpu/results/2026-11-27-h200-mps/)",
    "6e1801a": "session 32: Streaming DiLoCo at 4 emulated hosts, 3 seeds, delay 1 and 2, beside DiLoCo "
               "(benchmarks/lowcomm/results/s32/)",
    "9ff6f4f": "session 32: the same folder with Streaming DiLoCo at 2 emulated hosts, 3 seeds, added "
               "(benchmarks/lowcomm/results/s32/)",
    "e722bf2": "session 33: the DiLoCo ETTR race, lightcc's elastic DiLoCo against torchft's DiLoCo "
               "(benchmarks/elastic/results/ettr-diloco-s33/), and sparseloco's engine codec "
               "(benchmarks/lowcomm/results/s33/)",
    "625c98a": "session 33: the same sparseloco folder with the 4-host race added (benchmarks/lowcomm/results/s33/)",
    "ec52768": "session 34: the GPU checks at 0fc2045 on one H100, MPS on and off, and ddp-cpu on its 16 cores "
               "(benchmarks/gpu/results/2026-11-27-h100-s34/)",
    "3316526": "session 34: DDP and the DistributedOptimizer against the compute bound and the barrier contender, "
               "one host (benchmarks/engine/results/s34/onehost/)",
    "f99a7ae": "session 34: the same folder with CPU binding's A/B on one host, the new default's 3 rounds and the "
               "per-step stalls of unbound ranks (benchmarks/engine/results/s34/)",
    "0999f8b": "session 34: the same folder with the TensorFlow front under binding and binding's A/B on 2 emulated "
               "hosts of 2 ranks (benchmarks/engine/results/s34/)",
    "4f4146a": "session 35: one host, LIGHTCC_OVERLAP's A/B, the nice-19 engine thread tried, the issue-44 invocation "
               "before and after with the TF front on the torch network, and where TF's step time goes",
    "20da279": "session 35: the same folder with the final code's 3-round one-host invocation "
               "(benchmarks/engine/results/s35/onehost-final/)",
    "404de83": "session 36: DDP's buckets held until the backward pass ends against LIGHTCC_OVERLAP=on, "
               "issue 44's acceptance on emulated hosts at one commit, the engine A/B from c78f1cd, the "
               "one-host invocation (benchmarks/engine/results/s36/), Horovod's TF suites "
               "(benchmarks/compat/results/horovod-s36/)",
    "63f24e7": "session 37: DiLoCo against DDP at equal tokens over 2000 steps, outer momentum 0.5 and 0.9, 2 and "
               "4 ranks, three seeds; the 1 Gbit/s race over 2000 steps (benchmarks/lowcomm/results/long-s37/)",
    "56ff9c3": "session 38: int8, int4, streaming and SparseLoCo's outer steps over 2000 steps at today's DiLoCo "
               "defaults, 2 ranks, seed 0 (benchmarks/lowcomm/results/long-s38/)",
    "66280c4": "session 39: SparseLoCo's outer step over three seeds at 2 ranks and one at 4, and DiLoCo's outer "
               "lr 1.0 at 2 and 4 ranks over three seeds, 2000-step task (benchmarks/lowcomm/results/long-s39/)",
    "5b29bb0": "session 40: DDP and DiLoCo at outer lr 1.0 at 8 ranks over 2000 steps, seed 0 "
               "(benchmarks/lowcomm/results/long-s40/)",
    "cb10067": "session 41: DiLoCo at outer lr 1.4 (0.5 sqrt(M)) at 8 ranks over 2000 steps, seed 0 "
               "(benchmarks/lowcomm/results/long-s41/)",
    "58848ba": "session 42: sparseloco at 4 ranks, seeds 1 and 2; sparseloco:0.2 at 2 ranks, seeds 1 and 2, "
               "Nesterov lr 1.0 and SGD lr 2 (benchmarks/lowcomm/results/long-s42/)",
    "2c3dbf5": "session 43: the 100 Mbit/s race over 2000 steps at today's DiLoCo defaults, streaming's wait at delay 1 "
               "and 2 and its merge at momentum 0.5, sparseloco's lr 2.8 at 4 ranks (benchmarks/lowcomm/results/long-s43/)",
    "75707b8": "session 44: streaming's wait at delay 1 and 2 at 100 Mbit/s over 2000 steps, seeds 1 and 2 "
               "(benchmarks/lowcomm/results/long-s44/)",
    "8b68f96": "session 44: the same with streaming at delay 3 on seed 2 added (benchmarks/lowcomm/results/long-s44/)",
    "1e9d406": "session 45: the 100 Mbit/s race over 2000 steps at today's defaults, seeds 1 and 2, and streaming's "
               "wait at delay 2 on seed 0, on an AVX-512 machine (benchmarks/lowcomm/results/long-s45/)",
    "24ec797": "session 45: sparseloco:0.2 with Nesterov lr 1.0 at 2 ranks over 2000 steps, seeds 1 and 2, on the "
               "same machine (benchmarks/lowcomm/results/long-s45/)",
    "a479336": "session 46: every outer-step codec over three seeds at 2 ranks over 2000 steps on one AVX-512 "
               "machine: int8, fp8, int4, e3m0, sparseloco at H = 25 and 50 (benchmarks/lowcomm/results/long-s46/)",
    "700b59e": "session 47: seeds 3 and 4 at 2 ranks (DDP, DiLoCo, int8, sparseloco, sparseloco:0.2) and sparseloco's "
               "reduce-scatter form at 4 ranks, 2000 steps, the same machine (benchmarks/lowcomm/results/long-s47/)",
}


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, timeout=120, check=False)


def files(commit: str) -> Optional[List[str]]:
    """Every path under benchmarks/ in `commit`, or None when this clone lacks the commit (a shallow one)."""
    out = _git("ls-tree", "-r", "--name-only", commit, "benchmarks")
    return out.stdout.decode().splitlines() if out.returncode == 0 else None


def holder(path: str) -> Optional[str]:
    """The newest archive that holds `path` (a file, or a folder's prefix), if any."""
    for commit in reversed(list(ARCHIVES)):
        listed = files(commit) or []
        prefix = path.rstrip("/") + "/"
        if any(f == path or f.startswith(prefix) for f in listed):
            return commit
    return None


def checkout(dest: Path) -> int:
    """Writes every archived file under `dest`, oldest archive first; returns how many."""
    count = 0
    for commit in ARCHIVES:
        out = _git("archive", "--format=tar", commit, "--", "benchmarks")
        if out.returncode != 0:
            raise RuntimeError(f"git archive {commit} failed (a shallow clone? fetch its history): "
                               f"{out.stderr.decode().strip()}")
        with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tar:
            members = [m for m in tar.getmembers() if "/results/" in m.name or "_results/" in m.name]
            tar.extractall(dest, members=members, filter="data")
            count += sum(m.isfile() for m in members)
    return count


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    co = sub.add_parser("checkout", help="write every archived file under DIR")
    co.add_argument("dir", nargs="?", type=Path, default=RESULTS_CHECKOUT)
    sh = sub.add_parser("show", help="print one archived file")
    sh.add_argument("path")
    sub.add_parser("list", help="the archives")
    args = ap.parse_args(argv)
    if args.cmd == "checkout":
        print(f"{checkout(args.dir)} files under {args.dir}")
    elif args.cmd == "show":
        commit = holder(args.path)
        if commit is None:
            print(f"no archive holds {args.path}", file=sys.stderr)
            return 1
        sys.stdout.buffer.write(_git("show", f"{commit}:{args.path}").stdout)
    else:
        for commit, what in ARCHIVES.items():
            print(f"{commit}  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
