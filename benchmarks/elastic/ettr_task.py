"""The training task every system of the ETTR race runs: examples/pytorch/elastic_ddp.py's model, batches and digest.

The torchrun and torchft workers (ettr_torchrun_worker.py, ettr_torchft_worker.py) import them from
the example itself, so all three systems train the same model on the same global batch per step
and print the same lines: ``step <n> <unix time> <world size> <digest>`` per step kept,
``eval <loss>`` and ``final <n> identical=<bool>`` at the end.
"""
from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from types import ModuleType

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pytorch" / "elastic_ddp.py"
DILOCO_EXAMPLE = EXAMPLE.with_name("elastic_diloco.py")


def example(path: Path = EXAMPLE) -> ModuleType:
    """An example module loaded from its file: the DDP one (build, batch, digest, eval_loss) by default,
    or DILOCO_EXAMPLE (build, batch, digest) for the DiLoCo race."""
    spec = importlib.util.spec_from_file_location(path.stem + "_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def task_args(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The flags the three systems share, with the example's defaults."""
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--model", choices=["small", "mlp25m"], default="small")
    p.add_argument("--global-batch", type=int, default=24)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--step-time", type=float, default=0.0)
    return p


def replica_args(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The flags of a torchft replica (ettr_torchft_worker.py, ettr_torchft_diloco_worker.py)."""
    p.add_argument("--addr", required=True, help="this host's address (for the store, the manager and gloo)")
    p.add_argument("--store-port", type=int, default=29600)
    p.add_argument("--replica-id", required=True)
    p.add_argument("--min-replicas", type=int, default=3)
    p.add_argument("--timeout", type=float, default=10.0, help="collective and quorum timeouts, seconds")
    return p
