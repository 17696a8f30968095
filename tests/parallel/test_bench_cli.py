"""End-to-end tests of lightcc-bench: real worker processes via lightccrun and mpirun, JSON checked.

These assert that every requested row exists, is verified and positive; never how fast it is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from lightcc.bench.report import validate_report
from testbed import procs

REPO = Path(__file__).resolve().parents[2]
BENCH_TIMEOUT_S = 150  # the bench's own hard limit on its workers
OUTER_TIMEOUT_S = 210  # ours on the whole front end, in case that limit fails
K = 1024


def _env(marker: str = "") -> dict[str, str]:
    return procs.base_env({"LIGHTCC_BENCH_TEST_MARKER": marker} if marker else None)


def _bench(args: list[str], tmp_path: Path, marker: str = "") -> tuple[subprocess.CompletedProcess, Path]:
    """Run ``python -m lightcc.bench ARGS --json out.json`` in its own session, hard-limited (testbed/procs.py)."""
    out = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "lightcc.bench", *args, "--json", str(out)]
    if "--timeout" not in args:
        cmd += ["--timeout", str(BENCH_TIMEOUT_S)]
    return procs.run(cmd, OUTER_TIMEOUT_S, _env(marker), REPO), out


def _ok(args: list[str], tmp_path: Path) -> tuple[str, dict]:
    res, out = _bench(args, tmp_path)
    assert res.returncode == 0, f"exit {res.returncode}\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    doc = json.loads(out.read_text())
    validate_report(doc)
    return res.stdout, doc


def _check_rows(doc: dict, library: str, op: str, sizes: list[int], ratio: bool) -> None:
    rows = [r for r in doc["rows"] if r["library"] == library and r["op"] == op]
    assert sorted(r["size"] for r in rows) == sorted(sizes), rows
    for r in rows:
        assert r["busbw"] > 0 and r["algbw"] > 0 and r["time_us"] > 0
        assert (r["ratio"] is not None and r["ratio"] > 0) if ratio else r["ratio"] is None


def test_allreduce_lightcc(tmp_path: Path) -> None:
    stdout, doc = _ok(["allreduce", "--np", "2", "--sizes", "4K:64K", "--iters", "3", "--warmup", "1"], tmp_path)
    assert doc["np"] == 2 and doc["launcher"] == "lightccrun" and doc["libraries"] == ["lightcc"]
    _check_rows(doc, "lightcc", "allreduce", [4 * K, 16 * K, 64 * K], ratio=False)
    assert doc["machine"]["memcpy_gbps"] > 0 and doc["machine"]["add_gbps"] > 0
    assert "busbw(GB/s)" in stdout and "memcpy" in stdout
    for size in ("4096", "16384", "65536"):
        assert any(line.split()[:1] == [size] for line in stdout.splitlines())


def test_allreduce_compare_gloo(tmp_path: Path) -> None:
    args = ["allreduce", "--np", "2", "--sizes", "4K:64K", "--iters", "3", "--warmup", "1", "--compare", "gloo"]
    stdout, doc = _ok(args + ["--plot", str(tmp_path / "p.png")], tmp_path)
    assert doc["libraries"] == ["lightcc", "gloo"]
    _check_rows(doc, "lightcc", "allreduce", [4 * K, 16 * K, 64 * K], ratio=False)
    _check_rows(doc, "gloo", "allreduce", [4 * K, 16 * K, 64 * K], ratio=True)
    assert "gloo busbw" in stdout
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


# CI runs the bench under mpirun for allreduce and alltoall; the other three (19 s) with -m long.
@pytest.mark.parametrize("op", ["allreduce", pytest.param("allgather", marks=pytest.mark.long),
                                pytest.param("broadcast", marks=pytest.mark.long), "alltoall",
                                pytest.param("reducescatter", marks=pytest.mark.long)])
def test_collectives_under_mpirun(op: str, tmp_path: Path) -> None:
    args = [op, "--np", "2", "--sizes", "8,64K", "--iters", "3", "--warmup", "1", "--compare", "gloo,mpi"]
    _, doc = _ok(args, tmp_path)
    assert doc["launcher"] == "mpirun" and doc["libraries"] == ["lightcc", "gloo", "mpi"]
    _check_rows(doc, "lightcc", op, [8, 64 * K], ratio=False)
    for peer in ("gloo", "mpi"):
        _check_rows(doc, peer, op, [8, 64 * K], ratio=True)


def test_peers_only_three_ranks(tmp_path: Path) -> None:
    # 3 ranks: chunked sizes round to a multiple of 3 elements (12 B -> 3 floats, 64 KiB -> 16383 floats).
    args = ["alltoall", "--np", "3", "--sizes", "12,64K", "--iters", "3", "--warmup", "1"]
    _, doc = _ok(args + ["--no-lightcc", "--compare", "gloo,mpi"], tmp_path)
    assert doc["np"] == 3 and doc["libraries"] == ["gloo", "mpi"]
    _check_rows(doc, "gloo", "alltoall", [12, 16383 * 4], ratio=False)
    _check_rows(doc, "mpi", "alltoall", [12, 16383 * 4], ratio=True)


def test_latency(tmp_path: Path) -> None:
    _, doc = _ok(["latency", "--np", "2", "--iters", "20", "--warmup", "2", "--compare", "gloo,mpi"], tmp_path)
    for lib in ("lightcc", "gloo", "mpi"):
        _check_rows(doc, lib, "latency", [4 * K], ratio=lib != "lightcc")


def test_negotiation(tmp_path: Path) -> None:
    args = ["negotiation", "--np", "2", "--iters", "3", "--warmup", "1", "--tensors", "50", "--compare", "mpi"]
    stdout, doc = _ok(args, tmp_path)
    for lib in ("lightcc", "mpi"):
        _check_rows(doc, lib, "negotiation", [K], ratio=lib != "lightcc")
    for r in doc["rows"]:
        assert r["tensors"] == 50 and r["first_step_us"] > 0
    assert "first(us)" in stdout


def _processes_with(marker: str) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker.encode() in (d / "environ").read_bytes():
                    found.append(int(d.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("peers,launcher", [("gloo", "lightccrun"), ("gloo,mpi", "mpirun")])
def test_timeout_kills_workers(peers: str, launcher: str, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    args = ["allreduce", "--np", "2", "--no-lightcc", "--compare", peers, "--sizes", "256M", "--dtype", "float64"]
    res, out = _bench(args + ["--timeout", "1"], tmp_path, marker)
    assert res.returncode == 1, res.stderr
    assert "did not finish within 1 s" in res.stderr
    # Each worker's stacks (faulthandler on SIGABRT), relayed by its launcher before the kill.
    assert res.stderr.count("most recent call first") >= 2, res.stderr
    assert not out.exists()
    deadline = time.monotonic() + 10
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(marker) == [], f"{launcher} left workers behind"


@pytest.mark.parametrize(
    "args,message",
    [
        (["allreduce", "--compare", "nccl"], "--compare accepts"),
        (["allreduce", "--sizes", "64K:4K"], "LO is larger than HI"),
        (["allreduce", "--np", "0"], "--np must be at least 1"),
        (["allreduce", "--no-lightcc"], "needs --compare"),
    ],
)
def test_bad_arguments_fail_cleanly(args: list[str], message: str, tmp_path: Path) -> None:
    res, out = _bench(args, tmp_path)
    assert res.returncode == 1 and not out.exists()
    assert "lightcc-bench: error: " in res.stderr and message in res.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="emulated hosts make network namespaces: root only")
def test_allreduce_on_emulated_hosts_beside_gloo(tmp_path: Path) -> None:
    # lightcc-bench runs testbed/bench_hosts.py as a subprocess (the package never imports testbed).
    args = ["allreduce", "--hosts", "2x2", "--rate", "1gbit", "--sizes", "64K,1M", "--iters", "3", "--warmup", "1",
            "--compare", "gloo"]
    _, doc = _ok(args, tmp_path)
    assert doc["np"] == 4 and doc["launcher"] == "emulated hosts 2x2 (1gbit links)", doc["launcher"]
    _check_rows(doc, "lightcc", "allreduce", [64 * K, 1024 * K], ratio=False)
    _check_rows(doc, "gloo", "allreduce", [64 * K, 1024 * K], ratio=True)


def test_emulated_hosts_refuse_what_they_cannot_do(tmp_path: Path) -> None:
    res, _ = _bench(["allreduce", "--hosts", "2x", "--sizes", "4K"], tmp_path)
    assert res.returncode == 1 and "--hosts '2x': use HOSTSxRANKS" in res.stderr, res.stderr
    res, _ = _bench(["allreduce", "--rate", "1gbit", "--sizes", "4K"], tmp_path)
    assert res.returncode == 1 and "--rate shapes emulated hosts' links: it needs --hosts" in res.stderr, res.stderr
    res, _ = _bench(["allreduce", "--hosts", "2x1", "--compare", "mpi", "--sizes", "4K"], tmp_path)
    assert res.returncode == 1 and "--compare mpi" in res.stderr, res.stderr
