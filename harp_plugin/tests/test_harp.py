"""HARP test entry for pytest: runs the built conformance harness, unit tests, NetLink test,
netns/veth tests and a short fuzz run, each under a hard timeout.

Builds nothing: set HARP_BUILD_DIR to the CMake build of harp_plugin (default ../build/harp
relative to harp_plugin/). Skips only what this machine cannot run (netns without root/ip).
"""

import filecmp
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from testbed import netns

HERE = Path(__file__).resolve().parent
_INSTALLED = HERE.parent.parent / "lightcc" / "lib"  # where setup.py ships the binaries
BUILD = Path(os.environ.get("HARP_BUILD_DIR", _INSTALLED if (_INSTALLED / "harp_conformance").exists()
                            else HERE.parent.parent / "build" / "harp")).resolve()
LIB = BUILD / "libnccl-net-harp.so"


def _run(cmd, timeout, env_extra=None):
    env = dict(os.environ)
    env.pop("HARP_JOB_SECRET", None)  # each test process sets its own
    env.update(env_extra or {})
    proc = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, env=env
    )
    return proc


def _need(path):
    if not path.exists():
        pytest.fail(f"{path} not built: build harp_plugin with CMake first (HARP_BUILD_DIR={BUILD})")


def test_exports_and_no_cuda_dependency():
    _need(LIB)
    nm = subprocess.run(["nm", "-D", "--defined-only", str(LIB)], capture_output=True, text=True)
    exported = sorted(line.split()[-1] for line in nm.stdout.splitlines() if line.strip())
    # the NCCL ABI structs and lightcc's completion-hook setter (src/completion_hook.h), nothing else
    assert exported == ["harpSetCompletionHook"] + [f"ncclNetPlugin_v{v}" for v in (10, 11, 12, 8, 9)], exported
    ldd = subprocess.run(["ldd", str(LIB)], capture_output=True, text=True).stdout
    assert "cuda" not in ldd.lower() and "nccl" not in ldd.lower(), ldd
    assert filecmp.cmp(LIB, BUILD / "libnccl-net.so", shallow=False)


def test_unit():
    _need(BUILD / "harp_unit")
    p = _run([BUILD / "harp_unit"], timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_conformance():
    _need(BUILD / "harp_conformance")
    p = _run([BUILD / "harp_conformance", "--lib", LIB], timeout=400)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    assert " 0 failed" in p.stdout


@pytest.mark.parametrize("zc", ["uring", "msg"])
def test_conformance_other_send_paths(zc):
    _need(BUILD / "harp_conformance")
    for case in ("transfer_v10", "transfer_v12", "sender_dies"):
        p = _run([BUILD / "harp_conformance", "--lib", LIB, "--case", case], 150, {"HARP_ZC": zc})
        assert p.returncode == 0, p.stdout + p.stderr[-4000:]


def test_transfers_with_sleeping_instances():
    """HARP_BUSY_POLL_US=0: instances sleep as soon as they are idle, so every post depends on the
    selective wake-ups (a missed one stalls a transfer until the instance's 1 s timeout)."""
    _need(BUILD / "harp_conformance")
    for case in ("transfer_v10", "transfer_v11", "transfer_v12"):
        p = _run([BUILD / "harp_conformance", "--lib", LIB, "--case", case], 150, {"HARP_BUSY_POLL_US": "0"})
        assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    p = _run([BUILD / "harp_net_link_test", "--lib", LIB], 120, {"HARP_BUSY_POLL_US": "0"})
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]


def test_bad_setting_is_a_clear_init_error():
    _need(BUILD / "harp_conformance")
    p = _run([BUILD / "harp_conformance", "--lib", LIB, "--case", "bad_setting"], timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    for bad in ("fast", "-5", "9999999"):
        assert f"HARP_BUSY_POLL_US='{bad}' is invalid" in p.stderr, p.stderr[-4000:]


def test_net_link():
    exe = BUILD / "harp_net_link_test"
    _need(exe)
    p = _run([exe, "--lib", LIB], timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]


def test_fuzz_short():
    libfuzzer = BUILD / "harp_fuzz_wire_libfuzzer"
    exe = libfuzzer if libfuzzer.exists() else BUILD / "harp_fuzz_wire"
    _need(exe)
    args = [exe, "-max_total_time=15"]
    if exe == libfuzzer:
        args += ["-rss_limit_mb=2048", "-print_final_stats=0"]
    p = _run(args, timeout=120)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]


def test_netns_veth():
    """Two namespaces joined by a veth act as two hosts: the conformance transfers run across them, then,
    with the link shaped by tc tbf, HARP reaches at least 90 % of the shaped rate (goodput ~0.95 x rate)."""
    if netns.unavailable() is not None:
        pytest.skip(netns.unavailable())
    rate_mbit = 800
    with netns.pair("harp") as p:
        for case in ("transfer_v10", "transfer_v12"):
            r = _run([BUILD / "harp_conformance", "--lib", LIB, "--case", case, "--ns-recv", p.ns_recv,
                      "--ns-send", p.ns_send, "--ifname", p.ifname_prefix], timeout=120)
            assert r.returncode == 0, f"{case} over veth\n{r.stdout[-2000:]}{r.stderr[-2000:]}"
        for ns, dev in ((p.ns_recv, p.if_recv), (p.ns_send, p.if_send)):
            netns.tc(ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", f"{rate_mbit}mbit", "burst", "1mb",
                     "latency", "100ms")
        r = _run([BUILD / "harp-bench", "--lib", LIB, "--modes", "harp,socket1", "--sizes", "4M,16M",
                  "--mb-per-size", "96", "--ns-recv", p.ns_recv, "--ns-send", p.ns_send, "--ifname", p.if_recv],
                 timeout=120, env_extra={"HARP_JOB_SECRET": "netns", "HARP_IFNAME": p.ifname_prefix,
                                         "HARP_NFLOWS": "4"})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    best = max((float(m.group(1)) for line in r.stdout.splitlines() if "mode=harp" in line
                for m in [re.search(r"GB/s=([\d.]+)", line)] if m), default=0.0)
    assert best >= rate_mbit * 0.9 / 8 / 1000, f"HARP best {best} GB/s on a {rate_mbit} Mbit/s link:\n{r.stdout}"


def test_flowcap_scenario_runs_and_cleans_up():
    """The per-flow-cap benchmark scenario builds its shaped link, runs every mode and removes its
    namespaces. Rates are printed, not asserted (speed lives in benchmarks)."""
    if netns.unavailable() is not None:
        pytest.skip(netns.unavailable())
    _need(BUILD / "harp-bench")

    def namespaces():
        out = subprocess.run(["ip", "netns", "list"], check=False, capture_output=True, text=True, timeout=20).stdout
        return {line.split()[0] for line in out.splitlines() if line.strip()}

    before = namespaces()
    env = {"PYTHONPATH": str(HERE.parent.parent)}
    p = _run([sys.executable, "-m", "benchmarks.harp.scenarios", "--shape", "flowcap", "--rate", "200mbit",
              "--sizes", "1M", "--mb-per-size", "8", "--repeats", "1", "--flows", "2", "--streams", "2",
              "--bench", BUILD / "harp-bench", "--lib", LIB], timeout=300, env_extra=env)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    rows = [line.split()[0:2] for line in p.stdout.splitlines() if not line.startswith("#")]
    assert [r[0] for r in rows[1:]] == ["socket1", "harp", "tcp"], p.stdout
    assert {n for n in namespaces() - before if n.startswith("hs")} == set(), "scenario left namespaces"


def test_harp_setup_writes_profile(tmp_path):
    _need(BUILD / "harp-setup")
    out = tmp_path / "profile"
    p = _run([BUILD / "harp-setup", "--ifname", "lo", "--output", out], timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Set up HARP successfully" in p.stdout and "hugepages=7680" in p.stdout
    text = out.read_text()
    assert "nic lo " in text and "HARP_IFNAME = lo" in text
