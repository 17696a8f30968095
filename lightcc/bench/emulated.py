"""``lightcc-bench --hosts 2x2 --rate 1gbit``: the command that runs the workers on emulated hosts.

Emulated hosts are network namespaces on a bridge with shaped links; making them needs root and
``ip``/``tc``, and the code lives in the source checkout's ``testbed/``, which is not installed.
The installed package never imports it: it runs ``python -m testbed.bench_hosts`` as a subprocess
with the checkout on PYTHONPATH, and without a checkout says so before measuring anything.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from lightcc.bench.launch import package_root

TESTBED_MODULE = "testbed.bench_hosts"


def parse_hosts(text: str) -> tuple[int, int]:
    """'2x2' -> (2 hosts, 2 ranks per host); ValueError naming the option otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        raise ValueError(f"--hosts {text!r}: use HOSTSxRANKS, such as 2x2 (2 hosts of 2 ranks)")
    return int(m.group(1)), int(m.group(2))


def check_emulation(libraries: tuple[str, ...]) -> None:
    """ValueError saying what --hosts lacks here: root, a source checkout, an MPI-free comparison."""
    if "mpi" in libraries:
        raise ValueError("--hosts starts the ranks itself: --compare mpi (mpirun) cannot run on emulated hosts")
    if not (Path(package_root()) / "testbed" / "bench_hosts.py").is_file():
        raise ValueError("--hosts needs the testbed/ of a lightcc source checkout (network namespaces are not "
                         "installed with the package): run `python -m lightcc.bench ...` from the checkout")
    if os.geteuid() != 0:
        raise ValueError("--hosts makes network namespaces and shapes their links: run as root")


def emulated_command(hosts: str, rate: str | None, spec_path: str, timeout_s: float) -> list[str]:
    """The command line that runs one bench worker per rank on HOSTS (NxM) with links shaped to RATE."""
    cmd = [sys.executable, "-m", TESTBED_MODULE, "--hosts", hosts, "--spec", spec_path, "--timeout", str(timeout_s)]
    return cmd + (["--rate", rate] if rate else [])
