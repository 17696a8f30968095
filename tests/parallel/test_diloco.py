"""lightcc.torch.DiLoCo with real ranks: equal to a one-process reference, each codec trains, bad input fails.

Each case starts 2 or 3 ranks of workers/diloco_worker.py (odd sizes matter: quantised averages
are gathered and summed in rank order) under lightcc.torch.init() or dist.init_process_group("lightcc").
"""
from __future__ import annotations

import pytest

from tests.ranks import free_port, run_ranks


def init_arg(style: str) -> str:
    return "hvd" if style == "hvd" else f"c10d:{free_port()}"


@pytest.mark.parametrize("size,style", [(2, "hvd"), (3, "c10d")])
def test_equal_to_the_reference_and_bad_input_fails_on_every_rank(size, style):
    """Plain and streaming DiLoCo against the reference; then each bad input (one start: starting torch dominates)."""
    run_ranks("diloco_worker.py", size, [init_arg(style), "reference,bad"], timeout=120)


def test_each_codec_trains_and_a_checkpoint_resumes_exactly():
    results = run_ranks("diloco_worker.py", 3, ["hvd", "train,checkpoint"], timeout=120)
    print("\n".join(line for line in results[0].stdout.splitlines() if line.startswith("TRAIN")))


@pytest.mark.parametrize("size,style", [(2, "hvd"), (3, "c10d")])
def test_elastic_rollback_and_resync_are_exact_and_a_new_worker_takes_the_shared_weights(size, style):
    """The elastic handler without a failure (the driver's cases are in test_elastic_diloco.py)."""
    run_ranks("diloco_worker.py", size, [init_arg(style), "elastic"], timeout=120)


def test_engine_topk_compresses_the_outer_step():
    env = {"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_DENSITY": "0.1", "LIGHT_TOPK_THRESHOLD": "512",
           "LIGHT_TOPK_WARMUP_STEPS": "0", "LIGHT_TOPK_CLIP": "0"}
    results = run_ranks("diloco_worker.py", 2, ["hvd", "topk"], timeout=120, env=env)
    print("\n".join(line for line in results[0].stdout.splitlines() if line.startswith("TRAIN")))
