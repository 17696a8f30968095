"""LIGHT_NUM_STREAMS: several fused batches in flight on separate channels, with real ranks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from testbed import netns, procs
from tests.ranks import TOPK_BARE, run_ranks

ROOT = Path(__file__).resolve().parents[2]
# Small fused buffers so one step makes many batches and every stream gets several.
BASE = {"HOROVOD_FUSION_THRESHOLD": str(1 << 20)}


def ok(results):
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr[-2000:]


@pytest.mark.parametrize("size", [2, 3, 4])
@pytest.mark.parametrize("streams", ["2", "3"])
def test_mixed_async_ops_match_numpy(size, streams):
    ok(run_ranks("streams_worker.py", size, ["mixed"], timeout=240, env={**BASE, "LIGHT_NUM_STREAMS": streams}))


def test_one_stream_runs_on_the_engine_thread():
    ok(run_ranks("streams_worker.py", 2, ["mixed", "1"], timeout=120, env={**BASE, "LIGHT_NUM_STREAMS": "1"}))


@pytest.mark.parametrize("size,intra,streams", [(4, 2, "2"), (3, 1, "3")])
def test_2d_and_topk_on_streams(size, intra, streams):
    env = {
        **BASE,
        "LIGHT_NUM_STREAMS": streams,
        "LIGHT_2D_ALLREDUCE": "1",
        "LIGHT_INTRA_SIZE": str(intra),
        **TOPK_BARE,
        "LIGHT_TOPK_ALLREDUCE": "1",
        "LIGHT_TOPK_THRESHOLD": "262144",
        "LIGHT_TOPK_DENSITY": "0.01",
    }
    ok(run_ranks("streams_worker.py", size, ["mixed"], timeout=300, env=env))


@pytest.mark.parametrize("size,intra", [(3, 0), (4, 2)])
def test_topk_residuals_stay_exact_on_streams(size, intra):
    # The top-k worker's conservation check (residual + delivered == contributed) per step.
    env = {
        "LIGHT_NUM_STREAMS": "2",
        **TOPK_BARE,
        "LIGHT_TOPK_ALLREDUCE": "1",
        "LIGHT_TOPK_THRESHOLD": "262144",
        "LIGHT_TOPK_DENSITY": "0.01",
    }
    if intra:
        env.update({"LIGHT_2D_ALLREDUCE": "1", "LIGHT_INTRA_SIZE": str(intra)})
    ok(run_ranks("topk_worker.py", size, timeout=240, env=env))


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_process_sets_on_streams(mode):
    # The dynamic mode also checks that add_process_set is refused until it sets the flag itself.
    ok(run_ranks("features_worker.py", 3, [mode], timeout=120, env={"LIGHT_NUM_STREAMS": "2"}))


def test_timeline_and_stall_inspector_on_streams(tmp_path):
    env = {"LIGHT_NUM_STREAMS": "2", "HOROVOD_TIMELINE": str(tmp_path / "t.json"), "HOROVOD_TIMELINE_MARK_CYCLES": "1"}
    ok(run_ranks("features_worker.py", 2, ["timeline"], timeout=60, env=env))
    env = {
        "LIGHT_NUM_STREAMS": "2",
        "HOROVOD_STALL_CHECK_TIME_SECONDS": "1",
        "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "3",
    }
    results = run_ranks("features_worker.py", 2, ["stall"], timeout=60, env=env)
    assert " 0 failed" in results[0].stdout and "allreduce.lonely" in results[0].stderr, results[0].stderr


def test_every_collective_on_three_streams():
    ok(run_ranks("collectives_worker.py", 3, timeout=300, env={**BASE, "LIGHT_NUM_STREAMS": "3"}))


@pytest.mark.parametrize("size", [2, 3])
def test_mismatches_error_on_every_rank_with_streams(size):
    ok(run_ranks("errors_worker.py", size, timeout=120, env={**BASE, "LIGHT_NUM_STREAMS": "2"}))


def test_init_shutdown_init():
    ok(run_ranks("streams_worker.py", 3, ["reinit"], timeout=120, env={"LIGHT_NUM_STREAMS": "2"}))


@pytest.mark.parametrize("size", [2, 3])
def test_shutdown_with_work_in_flight(size):
    results = run_ranks("streams_worker.py", size, ["shutdown"], timeout=120, env={"LIGHT_NUM_STREAMS": "2"})
    ok(results)
    outcomes = {res.stdout.split("OUTCOMES ")[1].split()[0] for res in results}
    assert len(outcomes) == 1, f"ranks disagree on which ops ran: {outcomes}"


@pytest.mark.parametrize("size", [2, 3])
def test_rank_death_fails_every_stream(size):
    results = run_ranks(
        "streams_worker.py",
        size,
        ["kill"],
        timeout=90,
        expect_ok=False,
        env={**BASE, "LIGHTCC_TIMEOUT": "30", "LIGHT_NUM_STREAMS": "2", "PYTHONFAULTHANDLER": "1"},
    )
    assert results[1].returncode == 3
    for res in results:
        if res.rank == 1:
            continue
        assert res.returncode == 0 and " 0 failed" in res.stdout, res.stdout + res.stderr
        assert float(res.stdout.split("raised after ")[1].split("s:")[0]) < 30, res.stdout
        assert "has exited" in res.stdout, res.stdout


@pytest.mark.parametrize("value", ["0", "9", "two"])
def test_bad_value_is_an_error_at_init(value):
    code = "import lightcc as hvd\ntry:\n    hvd.init()\nexcept ValueError as e:\n    print('ERR', e)\n"
    out = procs.run([sys.executable, "-c", code], 60, procs.base_env({"LIGHT_NUM_STREAMS": value}))
    assert out.stdout.startswith("ERR") and "LIGHT_NUM_STREAMS" in out.stdout, out.stdout + out.stderr


def test_ranks_must_agree_on_the_stream_count():
    results = run_ranks(
        "faults_worker.py",
        2,
        ["secret"],
        timeout=60,
        env={"LIGHTCC_TIMEOUT": "10"},
        per_rank_env={0: {"LIGHT_NUM_STREAMS": "2"}, 1: {"LIGHT_NUM_STREAMS": "3"}},
        expect_ok=False,
    )
    for res in results:
        assert res.returncode == 0 and "LIGHT_NUM_STREAMS" in res.stdout, res.stdout + res.stderr


@pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))
@pytest.mark.parametrize(
    "layout,extra",
    [
        ([0, 0, 1, 1], {}),
        ([0, 1, 1], {}),
        # 2D + top-k across hosts: each stream's cross-host rings run over its own HARP comms.
        ([0, 0, 1, 1], {**TOPK_BARE, "LIGHT_2D_ALLREDUCE": "1", "LIGHT_TOPK_ALLREDUCE": "1",
                        "LIGHT_TOPK_THRESHOLD": "262144"}),
    ],
)
def test_streams_across_hosts_over_harp(layout, extra):
    with netns.hosts(max(layout) + 1) as h:
        results = run_ranks(
            "streams_worker.py",
            len(layout),
            ["mixed", "2"],
            timeout=300,
            **h.placement(layout),
            env={
                **BASE,
                **extra,
                "LIGHT_NUM_STREAMS": "2",
                "HARP_IFNAME": h.ifname,
                "HARP_NFLOWS": "2",
                "HARP_NINSTANCES": "1",
                "LIGHTCC_TIMEOUT": "60",
            },
        )
    ok(results)
