"""Process sets, the timeline and the stall inspector, with real ranks."""
from __future__ import annotations

import pytest

from tests.ranks import free_port, run_ranks


@pytest.mark.parametrize("size", [2, 3, 4])
def test_static_process_sets(size):
    for res in run_ranks("features_worker.py", size, ["static"], timeout=120):
        assert " 0 failed" in res.stdout


@pytest.mark.parametrize("size", [2, 3])
def test_duplicate_static_process_sets_raise_value_error(size):
    for res in run_ranks("features_worker.py", size, ["duplicate"], timeout=120):
        assert " 0 failed" in res.stdout


@pytest.mark.parametrize("size", [2, 3])
def test_dynamic_process_sets(size):
    for res in run_ranks("features_worker.py", size, ["dynamic"], timeout=120):
        assert " 0 failed" in res.stdout


def test_timeline_is_chrome_trace_written_as_it_goes(tmp_path):
    path = tmp_path / "timeline.json"
    env = {"HOROVOD_TIMELINE": str(path), "HOROVOD_TIMELINE_MARK_CYCLES": "1"}
    for res in run_ranks("features_worker.py", 2, ["timeline"], timeout=60, env=env):
        assert " 0 failed" in res.stdout


def test_stall_inspector_names_missing_ranks():
    env = {"HOROVOD_STALL_CHECK_TIME_SECONDS": "1", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "3"}
    results = run_ranks("features_worker.py", 2, ["stall"], timeout=60, env=env)
    assert " 0 failed" in results[0].stdout
    warning = results[0].stderr
    assert "Stall" in warning and "rank 1" in warning and "allreduce.lonely" in warning, warning


def _cores_by_local_rank(results) -> dict:
    got = {}
    for res in results:
        local, cores = res.stdout.split("CORES ")[1].split()[:2]
        got[int(local)] = [int(c) for c in cores.split(",")]
    return got


@pytest.mark.parametrize("size", [2, 3])
def test_bind_auto_splits_the_cores_only_where_each_rank_gets_one(size):
    """The default (LIGHTCC_BIND=auto): disjoint shares when the ranks fit the cores, else no binding."""
    import os

    allowed = sorted(os.sched_getaffinity(0))
    results = run_ranks("bind_worker.py", size, timeout=120, env={"LIGHTCC_LOG_LEVEL": "info"})
    got = _cores_by_local_rank(results)
    fits = size <= len(allowed) and len(allowed) == os.cpu_count()
    if fits:
        flat = sorted(c for cores in got.values() for c in cores)
        assert flat == allowed, got  # disjoint, and together every core
        assert all(f"CPU binding: local rank {r.rank} of {size} on cores" in r.stderr for r in results)
    else:
        assert all(cores == allowed for cores in got.values()), got
        assert all("CPU binding: none (auto: " in r.stderr for r in results)


def test_bind_auto_leaves_cores_a_launcher_narrowed_alone():
    """A process started on fewer cores than are online (taskset here; mpirun --bind-to, numactl,
    a cpuset) keeps them: splitting them again would shrink what the launcher gave each rank."""
    import os

    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 3 or len(allowed) != os.cpu_count():
        pytest.skip("needs 3 or more cores, all of them this process's")
    narrowed = allowed[:-1]
    prefix = ["taskset", "-c", ",".join(map(str, narrowed))]
    results = run_ranks("bind_worker.py", 2, timeout=120, env={"LIGHTCC_LOG_LEVEL": "info"}, prefixes=[prefix, prefix])
    assert all(cores == narrowed for cores in _cores_by_local_rank(results).values())
    assert all("a choice made before init" in r.stderr for r in results)


def test_bind_none_leaves_every_rank_unbound():
    import os

    allowed = sorted(os.sched_getaffinity(0))
    got = _cores_by_local_rank(run_ranks("bind_worker.py", 2, timeout=120, env={"LIGHTCC_BIND": "none"}))
    assert all(cores == allowed for cores in got.values()), got


@pytest.mark.parametrize("size", [2, 3])
def test_bind_core_gives_each_local_rank_its_own_cores(size):
    import os

    results = run_ranks("bind_worker.py", size, timeout=120, env={"LIGHTCC_BIND": "core"})
    allowed = sorted(os.sched_getaffinity(0))
    got = {}
    for res in results:
        local, cores = res.stdout.split("CORES ")[1].split()[:2]
        got[int(local)] = [int(c) for c in cores.split(",")]
    for local, cores in got.items():
        assert set(cores) <= set(allowed) and cores, (local, cores)
    if size <= len(allowed):  # enough cores: the shares are disjoint
        flat = [c for cores in got.values() for c in cores]
        assert len(flat) == len(set(flat)), got


# CI: on and off, flat and groups, at 3 ranks; `-m long` adds the two cases at 2.
@pytest.mark.parametrize("mode,size,layout", [pytest.param("on", 2, "flat", marks=pytest.mark.long), ("off", 3, "flat"),
                                              pytest.param("off", 2, "groups", marks=pytest.mark.long),
                                              ("on", 3, "groups")])
def test_overlap_mode_gives_the_same_gradients(mode, size, layout):
    """LIGHTCC_OVERLAP=on starts each allreduce from the backward hook, off from step(): both
    average every gradient, and both refuse a second backward before step()."""
    results = run_ranks("overlap_worker.py", size, [layout], timeout=120, env={"LIGHTCC_OVERLAP": mode})
    for res in results:
        assert f"OVERLAP {mode == 'on'} " in res.stdout and " 0 failed" in res.stdout, res.stdout


@pytest.mark.parametrize("size", [2, 3])
def test_overlap_auto_waits_for_the_step_only_on_one_core_a_rank(size):
    """The default: on one host, a rank bound to a single core starts its collectives when the step
    waits (its compute and its shared-memory collectives would share that core); else during backward."""
    results = run_ranks("overlap_worker.py", size, ["flat"], timeout=120, env={"LIGHTCC_LOG_LEVEL": "info"})
    for res in results:
        cores = int(res.stdout.split("CORES ")[1].split()[0])
        assert f"OVERLAP {cores != 1} " in res.stdout and " 0 failed" in res.stdout, res.stdout
        assert "Gradient collectives start " + ("during the backward pass" if cores != 1 else "when the step waits") \
            in res.stderr


# CI: off and on at 2, auto at 3; `-m long` adds off at 3 (30 s of CI's time for no new path).
@pytest.mark.parametrize("mode,size", [("off", 2), ("on", 2), pytest.param("off", 3, marks=pytest.mark.long),
                                       ("auto", 3)])
def test_ddp_buckets_held_for_the_end_of_backward_average_the_same(mode, size):
    """DDP over the lightcc backend: with overlap off its buckets' allreduces wait for the end of the
    backward pass and average every gradient as they do started mid-pass; a wait inside the pass and
    a pass that fails after holding a call still complete."""
    env = {} if mode == "auto" else {"LIGHTCC_OVERLAP": mode}
    results = run_ranks("ddp_hold_worker.py", size, [str(free_port())], timeout=120, env=env)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr
        if mode != "auto":
            assert f"HELD {mode == 'off'} OVERLAP {mode == 'on'} " in res.stdout, res.stdout
