"""Unit tests for lightcc-bench's pure parts: sizes, busbw, patterns, timing, table, report, launch."""

from __future__ import annotations

import io
import itertools
import os
import sys
import time

import numpy as np
import pytest

from lightcc.bench import launch, metrics, patterns, sizes, table, timing
from lightcc.bench.progress import Progress, ProgressFollower, ProgressWriter
from lightcc.bench.report import SchemaError, build_report, validate_report, write_report
from lightcc.bench.spec import RunSpec
from lightcc.runner import processes

K, M = 1024, 1024 * 1024


# --- sizes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,value",
    [
        ("8", 8),
        ("4K", 4 * K),
        ("64KiB", 64 * K),
        ("256M", 256 * M),
        ("1g", 1024 * M),
        ("16MB", 16 * M),
        (" 2k ", 2 * K),
    ],
)
def test_parse_size(text: str, value: int) -> None:
    assert sizes.parse_size(text) == value


@pytest.mark.parametrize("text", ["", "0", "-4", "4X", "K", "1.5M", "4 K B"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        sizes.parse_size(text)


def test_default_range_holds_required_sizes() -> None:
    got = sizes.parse_sizes(sizes.DEFAULT_SIZES)
    assert got[0] == 8 and got[-1] == 256 * M
    for need in (4 * K, 64 * K, 1 * M, 16 * M, 64 * M, 256 * M):
        assert need in got
    assert got == sorted(set(got))
    assert all(b / a <= 4 for a, b in itertools.pairwise(got))


def test_parse_sizes_forms() -> None:
    assert sizes.parse_sizes("4K:64K") == [4 * K, 16 * K, 64 * K]
    assert sizes.parse_sizes("1K:8K:2") == [1 * K, 2 * K, 4 * K, 8 * K]
    assert sizes.parse_sizes("1M,4K,4K") == [4 * K, 1 * M]
    assert sizes.parse_sizes("100:1000") == [100, 250, 1000]  # 1000//4 = 250, then 62 < 100 stops
    assert sizes.parse_sizes("4K:4K") == [4 * K]


@pytest.mark.parametrize("spec", ["64K:4K", "1K:8K:1", "1:2:3:4", ",", "a:b"])
def test_parse_sizes_rejects(spec: str) -> None:
    with pytest.raises(ValueError):
        sizes.parse_sizes(spec)


def test_format_size() -> None:
    assert [sizes.format_size(v) for v in (8, 4 * K, 256 * M, 1024 * M, 1536)] == ["8B", "4K", "256M", "1G", "1536B"]


def test_iterations_scale_down_with_size() -> None:
    all_sizes = sizes.parse_sizes(sizes.DEFAULT_SIZES)
    iters = [sizes.iters_for_size(s, 100) for s in all_sizes]
    assert iters[0] == 100 and iters[-1] == sizes.MIN_ITERS
    assert all(a >= b for a, b in itertools.pairwise(iters))
    assert sizes.iters_for_size(256 * M, 3) == 3  # never more than asked
    assert sizes.warmup_for_size(256 * M, 100, 5) == 1
    assert sizes.warmup_for_size(8, 100, 5) == 5
    assert sizes.warmup_for_size(8, 100, 0) == 0


# --- metrics -------------------------------------------------------------------------------


def test_lightcc_cases_call_each_collective_as_its_row_says() -> None:
    """make_case reads the call off the op's row and calls.py: Sum where it reduces, root 0 where it has one,
    the in-place form where the numpy front has one."""
    from types import SimpleNamespace

    from lightcc.bench.backend_lightcc import LightccBackend

    made = []

    def recorder(call):
        return lambda *args, **kwargs: made.append((call, len(args), kwargs.get("op"), kwargs["name"])) or args[0]

    backend = LightccBackend()
    backend._hvd = SimpleNamespace(Sum="Sum", **{c: recorder(c) for c in (
        "allreduce_", "broadcast_", "allgather", "alltoall", "reducescatter")})
    inp = np.ones(4)
    for op in metrics.COLLECTIVES + ("latency",):
        case = backend.make_case(op, inp, "t")
        case.run()
        assert case.result() is inp
    assert made == [("allreduce_", 1, "Sum", "bench.allreduce.t"), ("allgather", 1, None, "bench.allgather.t"),
                    ("broadcast_", 2, None, "bench.broadcast.t"), ("alltoall", 1, None, "bench.alltoall.t"),
                    ("reducescatter", 1, "Sum", "bench.reducescatter.t"), ("allreduce_", 1, "Sum", "bench.latency.t")]
    with pytest.raises(ValueError, match="unknown collective"):
        backend.make_case("barrier", inp, "t")


def test_bench_commands_are_the_data_ops() -> None:
    from lightcc.bench.spec import COMMANDS
    from lightcc.common import op_spec

    assert metrics.COLLECTIVES == ("allreduce", "allgather", "broadcast", "alltoall", "reducescatter")
    assert metrics.COLLECTIVES == tuple(row.label for row in op_spec.OPS if row.moves_data)
    assert COMMANDS == (*metrics.COLLECTIVES, "latency", "negotiation")


def test_busbw_factors() -> None:
    assert metrics.busbw_factor("allreduce", 2) == 1.0
    assert metrics.busbw_factor("allreduce", 4) == 1.5
    assert metrics.busbw_factor("allreduce", 1) == 0.0
    for op in ("allgather", "reducescatter", "alltoall"):
        assert metrics.busbw_factor(op, 4) == 0.75
    assert metrics.busbw_factor("broadcast", 8) == 1.0
    assert metrics.busbw_factor("latency", 8) == metrics.busbw_factor("allreduce", 8) == 1.75
    with pytest.raises(ValueError):
        metrics.busbw_factor("gather", 2)
    with pytest.raises(ValueError):
        metrics.busbw_factor("allreduce", 0)


def test_bandwidth_arithmetic() -> None:
    assert metrics.algbw_gbps(1_000_000, 1000.0) == pytest.approx(1.0)
    assert metrics.busbw_gbps("allreduce", 1_000_000, 1000.0, 4) == pytest.approx(1.5)
    with pytest.raises(ValueError):
        metrics.algbw_gbps(8, 0.0)


def test_element_count_rounds_chunked_ops() -> None:
    assert metrics.element_count("allreduce", 8, 4, 3) == 2
    assert metrics.element_count("allreduce", 2, 4, 3) == 1
    assert metrics.element_count("allgather", 8, 4, 3) == 3  # at least one element per rank
    assert metrics.element_count("alltoall", 4 * K, 4, 3) == 1023
    assert metrics.element_count("reducescatter", 4 * K, 4, 2) == 1024


def _raw(lib: str, op: str, times: dict[int, float]) -> dict:
    return {
        "library": lib,
        "skipped": [],
        "results": [
            {"op": op, "size": s, "count": s // 4, "dtype": "float32", "time_us": t, "iters": 5, "warmup": 1}
            for s, t in times.items()
        ],
    }


def test_build_rows_ratios() -> None:
    rows = metrics.build_rows(
        [_raw("lightcc", "allreduce", {4096: 10.0, 65536: 20.0}), _raw("gloo", "allreduce", {4096: 40.0})], nranks=2
    )
    lc = [r for r in rows if r["library"] == "lightcc"]
    gl = [r for r in rows if r["library"] == "gloo"]
    assert len(lc) == 2 and len(gl) == 1
    assert all(r["ratio"] is None for r in lc)
    assert gl[0]["ratio"] == pytest.approx(4.0)
    assert lc[0]["busbw"] == pytest.approx(4096 / 10e-6 / 1e9)


def test_build_rows_latency_ratio_uses_time() -> None:
    rows = metrics.build_rows([_raw("lightcc", "latency", {4096: 50.0}), _raw("mpi", "latency", {4096: 25.0})], 2)
    assert rows[1]["ratio"] == pytest.approx(0.5)


# --- patterns: simulate each collective in numpy over p ranks ------------------------------


@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", ["float16", "float32", "int32", "int64"])
def test_patterns_agree_with_simulated_collectives(nranks: int, dtype: str) -> None:
    p, count = nranks, 6 * nranks
    ins = {
        op: [patterns.make_input(op, count, dtype, r, p) for r in range(p)]
        for op in ("allreduce", "broadcast", "allgather", "alltoall", "reducescatter")
    }
    chunk = count // p
    for r in range(p):

        def want(op: str, r: int = r) -> np.ndarray:
            return patterns.expected_output(op, count, dtype, r, p)

        np.testing.assert_array_equal(sum(ins["allreduce"]), want("allreduce"))
        np.testing.assert_array_equal(ins["broadcast"][0], want("broadcast"))
        np.testing.assert_array_equal(np.concatenate(ins["allgather"]), want("allgather"))
        got = np.concatenate([ins["alltoall"][s][r * chunk : (r + 1) * chunk] for s in range(p)])
        np.testing.assert_array_equal(got, want("alltoall"))
        np.testing.assert_array_equal(sum(ins["reducescatter"])[r * chunk : (r + 1) * chunk], want("reducescatter"))


def test_verify_reports_first_bad_element() -> None:
    want = np.arange(8, dtype=np.float32)
    patterns.verify("x", "allreduce", want.copy(), want, 0)
    bad = want.copy()
    bad[5] = -1
    with pytest.raises(patterns.VerificationError, match="index 5"):
        patterns.verify("gloo", "allreduce", bad, want, 1)
    with pytest.raises(patterns.VerificationError, match="elements"):
        patterns.verify("gloo", "allgather", want[:4], want, 1)


# --- timing --------------------------------------------------------------------------------


def test_time_batches_counts_calls_and_barriers() -> None:
    calls, barriers = [], []
    s = timing.time_batches(lambda: calls.append(1), iters=100, warmup=3, barrier=lambda: barriers.append(1))
    assert len(s) == 10 and len(calls) == 103 and len(barriers) == 10
    assert (s >= 0).all()
    calls.clear(), barriers.clear()
    s = timing.time_batches(
        lambda: calls.append(1), 7, 0, lambda: barriers.append(1), max_repeats=7, barrier_between=False
    )
    assert len(s) == 7 and len(calls) == 7 and len(barriers) == 1


def test_time_batches_measures_time() -> None:
    s = timing.time_batches(lambda: time.sleep(0.002), iters=4, warmup=0, barrier=lambda: None)
    assert (s >= 0.0019).all()


def test_reduce_gathered_takes_slowest_rank_then_median() -> None:
    rank0 = timing.pack_samples([np.array([1.0, 5.0, 3.0]), np.array([2.0])])
    rank1 = timing.pack_samples([np.array([4.0, 1.0, 1.0]), np.array([7.0])])
    assert rank0.shape == (6,)
    got = timing.reduce_gathered(np.stack([rank0, rank1]), ncases=2)
    assert got == [4.0, 7.0]  # max per repeat: [4, 5, 3] -> median 4; [7] -> 7


# --- table ---------------------------------------------------------------------------------


def test_table_has_a_line_per_size_and_peer_columns() -> None:
    rows = metrics.build_rows(
        [_raw("lightcc", "allreduce", {4096: 10.0, 65536: 20.0}), _raw("gloo", "allreduce", {4096: 40.0})], nranks=2
    )
    text = table.format_table(rows, ["lightcc", "gloo"])
    lines = text.splitlines()
    assert "busbw(GB/s)" in lines[1] and "gloo busbw" in lines[1] and "ratio" in lines[1]
    body = [ln for ln in lines if not ln.startswith("#") and "size" not in ln]
    assert len(body) == 2
    assert body[0].split()[0] == "4096" and body[0].split()[-1] == "4.00"
    assert body[1].split()[-2:] == ["n/a", "n/a"]  # no gloo row at 64 KiB


def test_table_negotiation_columns() -> None:
    raw = _raw("lightcc", "negotiation", {1024: 3000.0})
    raw["results"][0].update(tensors=300, first_step_us=9000.0)
    text = table.format_table(metrics.build_rows([raw], 2), ["lightcc"])
    assert "first(us)" in text and "9000.00" in text and "10.000" in text  # 3000 us / 300 tensors


def test_header_mentions_memory_bandwidth() -> None:
    head = table.format_header("allreduce", 2, "lightccrun", ["lightcc"], {"memcpy_gbps": 9.5, "add_gbps": 6.25})
    assert "memcpy 9.50 GB/s" in head and "numpy add 6.25 GB/s" in head
    assert all(line.startswith("#") for line in head.splitlines())
    assert "WARNING" not in head
    busy = table.format_header("allreduce", 2, "mpirun", ["mpi"], {"loadavg_1min": 1.5, "cores": 2})
    assert "WARNING: load average 1.50 on 2 cores" in busy


# --- report --------------------------------------------------------------------------------


def _doc() -> dict:
    rows = metrics.build_rows([_raw("lightcc", "allreduce", {4096: 10.0}), _raw("gloo", "allreduce", {4096: 40.0})], 2)
    return build_report("allreduce", 2, "lightccrun", ["lightcc", "gloo"], {"cores": 2}, rows, [])


def test_report_round_trip(tmp_path) -> None:
    import json

    path = tmp_path / "r.json"
    write_report(_doc(), str(path))
    doc = json.loads(path.read_text())
    validate_report(doc)
    assert {r["library"] for r in doc["rows"]} == {"lightcc", "gloo"}
    assert set(doc["rows"][0]) >= {"library", "op", "size", "dtype", "time_us", "algbw", "busbw", "ratio"}


@pytest.mark.parametrize(
    "breakage", ["schema", "missing_busbw", "zero_busbw", "bad_ratio", "unknown_lib", "nan_time", "no_rows_key"]
)
def test_report_schema_rejects(breakage: str) -> None:
    doc = _doc()
    row = doc["rows"][1]
    if breakage == "schema":
        doc["schema"] = "other/1"
    elif breakage == "missing_busbw":
        del row["busbw"]
    elif breakage == "zero_busbw":
        row["busbw"] = 0.0
    elif breakage == "bad_ratio":
        row["ratio"] = -1.0
    elif breakage == "unknown_lib":
        row["library"] = "nccl"
    elif breakage == "nan_time":
        row["time_us"] = float("nan")
    else:
        del doc["rows"]
    with pytest.raises(SchemaError):
        validate_report(doc)


def test_report_single_rank_has_zero_busbw() -> None:
    rows = metrics.build_rows([_raw("lightcc", "allreduce", {4096: 10.0}), _raw("mpi", "allreduce", {4096: 20.0})], 1)
    assert rows[0]["busbw"] == 0.0 and rows[1]["ratio"] == pytest.approx(2.0)
    validate_report(build_report("allreduce", 1, "mpirun", ["lightcc", "mpi"], {}, rows, []))


def test_plot_writes_png(tmp_path) -> None:
    path = tmp_path / "p.png"
    from lightcc.bench.plot import plot_report

    plot_report(_doc(), str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- spec, progress, launch ----------------------------------------------------------------


def test_spec_round_trip_and_validation(tmp_path) -> None:
    spec = RunSpec("allreduce", ("lightcc", "gloo"), (8, 4096), "float32", 10, 1, 300, "/tmp/x.json")
    spec.dump(str(tmp_path / "s.json"))
    assert RunSpec.load(str(tmp_path / "s.json")) == spec
    for bad in (
        {"command": "gather"},
        {"libraries": ("nccl",)},
        {"libraries": ("gloo", "gloo")},
        {"dtype": "complex64"},
        {"iters": 0},
        {"sizes": ()},
    ):
        fields = dict(spec.__dict__, **bad)
        with pytest.raises(ValueError):
            RunSpec(**fields)


def test_plain_progress_bar(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # makes "from tqdm import tqdm" fail
    out = io.StringIO()
    bar = Progress(4, stream=out)
    bar.advance("gloo 4K")
    bar.advance("gloo 16K", 3)
    bar.close()
    text = out.getvalue()
    assert "1/4 gloo 4K" in text and "4/4 gloo 16K" in text and "#" * 30 in text and text.endswith("\n")
    silent = io.StringIO()
    Progress(2, enabled=False, stream=silent).advance("x")
    assert silent.getvalue() == ""


def test_progress_file_carries_steps_to_the_front_end(tmp_path) -> None:
    path = str(tmp_path / "progress")
    shown: list[tuple[str, int]] = []

    class Bar:
        def advance(self, label: str, steps: int = 1) -> None:
            shown.append((label, steps))

    follower = ProgressFollower(path, Bar())
    follower.poll()  # no file yet: nothing, no error
    writer = ProgressWriter(path)
    writer.advance("lightcc 4K")
    follower.poll()
    writer.advance("gloo 8B", 3)
    with open(path, "a") as f:
        f.write("1\tgloo 1")  # a line still being written waits for the next poll
    follower.poll()
    writer.close()
    assert shown == [("lightcc 4K", 1), ("gloo 8B", 3)]
    with open(path, "a") as f:
        f.write("6M\n")
    follower.poll()
    assert shown[-1] == ("gloo 16M", 1)
    ProgressWriter(None).advance("x")  # other ranks write nothing


def test_launch_commands_and_env() -> None:
    cmd = launch.mpirun_command(3, "/s.json", is_root=True)
    assert cmd[1:3] == ["-np", "3"] and "--allow-run-as-root" in cmd and cmd[-2:] == ["--spec", "/s.json"]
    assert "--allow-run-as-root" not in launch.mpirun_command(3, "/s.json", is_root=False)
    cmd = launch.lightccrun_command(2, "/s.json")
    assert cmd[1:5] == ["-m", "lightcc.runner", "-np", "2"] and "lightcc.bench.worker" in cmd
    env = launch.worker_env(("lightcc", "gloo"), mpi=False, base={"PYTHONPATH": "/a"})
    assert env["PYTHONPATH"].split(os.pathsep) == [launch.package_root(), "/a"]
    host, port = env["LIGHTCC_BENCH_GLOO_ADDR"].split(":")
    assert host == "127.0.0.1" and 0 < int(port) < 65536
    env = launch.worker_env(("lightcc", "mpi"), mpi=True, base={}, nranks=2)
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1" and "LIGHTCC_BENCH_GLOO_ADDR" not in env
    assert env["OMP_NUM_THREADS"] == str(max(1, len(os.sched_getaffinity(0)) // 2))
    assert env["LIGHTCC_BIND"] == "core"
    assert launch.worker_env(("mpi",), mpi=True, base={"LIGHTCC_BIND": "none"})["LIGHTCC_BIND"] == "none"
    assert launch.worker_env(("mpi",), mpi=True, base={"OMP_NUM_THREADS": "3"}, nranks=2)["OMP_NUM_THREADS"] == "3"
    assert env["PYTHONFAULTHANDLER"] == "1"  # a worker killed at the timeout shows its stacks


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def test_run_workers_dumps_stacks_and_kills_the_whole_tree_on_timeout(tmp_path, capfd) -> None:
    """A launcher that ignores SIGTERM, with a worker in its group and one in a session of its own."""
    pids = tmp_path / "pids"
    script = (
        "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "a = subprocess.Popen(['sleep', '60']); "
        "b = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True); "
        f"open({str(pids)!r}, 'w').write(f'{{a.pid}} {{b.pid}}'); time.sleep(60)"
    )
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    t0 = time.monotonic()
    with pytest.raises(launch.LaunchError, match="did not finish within 2 s"):
        launch.run_workers([sys.executable, "-c", script], env, timeout_s=1.5)
    assert time.monotonic() - t0 < 1.5 + processes.DUMP_GRACE_S + 5
    children = [int(p) for p in pids.read_text().split()]
    deadline = time.monotonic() + 5
    while any(_alive(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(c) for c in children)
    # The launcher's and the Python worker's stacks, on the terminal the output goes to.
    assert capfd.readouterr().err.count("most recent call first") == 2


def test_run_workers_kills_the_tree_when_poll_raises(tmp_path) -> None:
    """Ctrl-C (or any error) in the front end while workers run leaves nothing running."""
    pidfile = tmp_path / "child.pid"
    script = f"import subprocess, time; p = subprocess.Popen(['sleep', '60']); " \
             f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(60)"

    def interrupt() -> None:
        if pidfile.exists() and pidfile.read_text():
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        launch.run_workers([sys.executable, "-c", script], dict(os.environ), 30, interrupt)
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_run_workers_polls_while_waiting() -> None:
    ticks: list[float] = []
    launch.run_workers(
        [sys.executable, "-c", "import time; time.sleep(1)"],
        dict(os.environ),
        30,
        lambda: ticks.append(time.monotonic()),
    )
    assert len(ticks) >= 3  # every POLL_INTERVAL_S (0.2 s) during the second, plus one at the end


def test_run_workers_reports_failure() -> None:
    with pytest.raises(launch.LaunchError, match="status 3"):
        launch.run_workers([sys.executable, "-c", "raise SystemExit(3)"], dict(os.environ), timeout_s=30)
    launch.run_workers([sys.executable, "-c", "pass"], dict(os.environ), timeout_s=30)
