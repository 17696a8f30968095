"""The ETTR race's bookkeeping (benchmarks/elastic/ettr.py): its failure schedule and what it reads from step lines."""
from __future__ import annotations

import argparse

from benchmarks.elastic.ettr import schedule, summarise


def _line(t: float, step: int, world: int, host: int = 1) -> tuple:
    return (t, host, f"step {step} {t:.3f} {world} d{step:04d}")


def test_schedule_is_seeded_jittered_and_inside_the_run():
    args = argparse.Namespace(steps=400, kill_every=100, seed=1)
    kills = schedule(args)
    assert kills == schedule(args) and len(kills) == 3
    assert all(abs(k - 100 * (i + 1)) <= 25 for i, k in enumerate(kills)), kills


def test_a_restart_from_a_checkpoint_counts_the_steps_done_again_and_the_longest_pause():
    # Steps 1..10 every 0.1 s; a host is lost at t=1.05; training resumes at t=5.0 from step 5 (the
    # checkpoint) with 3 ranks, and the world is whole again from step 8.
    lines = [_line(0.1 * n, n, 4) for n in range(1, 11)]
    lines += [_line(5.0 + 0.1 * (n - 6), n, 3 if n < 8 else 4, host=2) for n in range(6, 13)]
    lines += [(5.9, 2, "eval 0.5"), (5.9, 2, "final 12 identical=True")]
    kill = {"what": "kill", "host": 1, "t": 1.05, "at_step": 10}
    s = summarise(lines, [kill], steps=12, active=4)
    assert s["reached"] == 12 and s["identical"] is True and s["eval_loss"] == 0.5
    k = s["kills"][0]
    assert k["steps_lost"] == 5, k  # steps 6..10 were trained twice
    assert abs(k["stall_s"] - 4.0) < 1e-6, k  # from step 10 (t=1.0) to step 6 again (t=5.0)
    assert abs(k["kill_to_whole_world_s"] - (5.2 - 1.05)) < 1e-6, k
    assert abs(s["wall_s"] - (5.6 - 0.1)) < 1e-6
    assert abs(s["step_median_s"] - 0.1) < 1e-6  # over the trajectory kept


def test_torchft_replicas_with_different_final_weights_are_not_identical():
    lines = [_line(0.1, 1, 2), (0.2, 1, "final 1 replica=r1 digest=aa"), (0.2, 2, "final 1 replica=r2 digest=bb")]
    assert summarise(lines, [], steps=1, active=2)["identical"] is False
