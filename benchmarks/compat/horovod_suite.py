"""Runs one of Horovod 0.28.1's own parallel test files against lightcc at N ranks and counts the results.

    python -m benchmarks.compat.horovod_suite test_tensorflow.py [--np 2] [--keras tf-keras|keras3]
        [-k EXPR] [--per-test-timeout S] [--timeout S] [--json OUT] [--keep DIR] [-- PYTEST_ARGS...]

The test file and the helpers it imports (test/parallel/base_test_*.py, test/utils/common.py,
test/conftest.py) are read from the Horovod mirror with `git show v0.28.1:...`, their `horovod`
imports rewritten to `lightcc`, and written to a temporary tree; nothing of Horovod's is kept
in this repository. Test-harness helpers lightcc does not provide (Horovod's `in_thread`,
`get_env_rank_and_size`, and `mock` when the backport is not installed) are served by small
support modules written beside it. The file then runs under `python -m lightcc.runner.launch -np N` with pytest
in every rank. A small pytest plugin (written next to it) appends each test's outcome to a
per-rank JSON-lines file as it finishes, so a hang or a crash still leaves the counts so far and
names the test that never finished.

A test counts as passed when it passed on every rank that ran it, failed when it failed (or
errored) on any rank, skipped when every rank skipped it; a test that some rank started but
never finished is reported as `hung`. The per-test outcomes are printed and, with --json,
written out so two runs can be diffed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from testbed import procs

ROOT = Path(__file__).resolve().parents[2]
MIRROR = Path(os.environ.get("HOROVOD_MIRROR", "/work/.mirror/horovod+horovod/repo"))
TAG = "v0.28.1"

# Modules Horovod's test helpers import that are not part of the API under test; when lightcc
# does not provide one, the import is served by _suite_support (written by this runner).
_SUPPORT_MODULES = {"lightcc.runner.util.threads": "_suite_support",
                    "lightcc.runner.common.util.env": "_suite_support"}

_SUPPORT = '''"""Test-harness helpers the Horovod test utilities import (written by horovod_suite)."""
import os
import threading


def get_env_rank_and_size():
    """(rank, size) from the first launcher pair set in the environment, else (0, 1)."""
    for rank_var, size_var in (("HOROVOD_RANK", "HOROVOD_SIZE"), ("LIGHTCC_RANK", "LIGHTCC_SIZE"),
                               ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE")):
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return 0, 1


def in_thread(target, args=(), name=None, daemon=True, silent=False):
    """Start `target(*args)` in a daemon thread and return the thread."""
    thread = threading.Thread(target=target, args=args, name=name, daemon=daemon)
    thread.start()
    return thread
'''

# `mock` (the PyPI backport Horovod's test/utils/common.py imports) is unittest.mock's API; when it is
# not installed, this stands in for it.
_MOCK = '''"""unittest.mock under the name `mock` (written by horovod_suite; the backport is not installed)."""
from unittest.mock import *  # noqa: F401,F403

# The backport's version: `parameterized` (which test_tensorflow2_keras.py uses) reads it when `mock`
# imports; 5 is the backport that matches Python 3.8+'s unittest.mock.
version_info = (5, 1, 0)
'''

_PLUGIN = '''"""pytest plugin (written by horovod_suite): one JSON line per test phase outcome, flushed at once."""
import json
import os

_OUT = None


def _out():
    global _OUT
    if _OUT is None:
        rank = os.environ.get("HOROVOD_RANK") or os.environ.get("LIGHTCC_RANK") or "0"
        _OUT = open(os.path.join(os.environ["HOROVOD_SUITE_OUT"], "rank%s.jsonl" % rank), "a", buffering=1)
    return _OUT


def pytest_runtest_logstart(nodeid, location):
    _out().write(json.dumps({"test": nodeid, "event": "start"}) + "\\n")


def pytest_collectreport(report):
    if report.failed:  # a file that cannot even be collected counts as a failed test, not as nothing
        _out().write(json.dumps({"test": report.nodeid or "<collection>", "event": "collect", "outcome": "failed",
                                 "msg": str(report.longrepr)[-1500:]}) + "\\n")


def pytest_runtest_logreport(report):
    msg = ""
    if report.failed:
        crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", "")
        msg = (crash[:1500] + "\\n" if crash else "") + str(report.longrepr)[-800:]
    elif report.skipped and isinstance(report.longrepr, tuple):
        msg = str(report.longrepr[2])[:300]
    _out().write(json.dumps({"test": report.nodeid, "event": report.when, "outcome": report.outcome,
                             "msg": msg}) + "\\n")
'''


def git_show(path: str) -> str:
    """A file of Horovod at TAG, read from the mirror."""
    return subprocess.run(["git", "-C", str(MIRROR), "show", f"{TAG}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def rewrite(text: str) -> str:
    """`horovod` imports and dotted module names become lightcc's."""
    text = re.sub(r"^(\s*)(import|from)\s+horovod\b", r"\1\2 lightcc", text, flags=re.MULTILINE)
    text = re.sub(r"(?<![\w/.-])horovod(?=\.[a-z_])", "lightcc", text)
    for missing, support in _SUPPORT_MODULES.items():
        if _module_missing(missing):
            text = text.replace(f"from {missing} import", f"from {support} import")
    return text


def _module_missing(name: str) -> bool:
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({name!r}) is None)"
    try:
        return procs.run([sys.executable, "-c", code], 300, _env({})).returncode != 0
    except OSError:
        return True


def _env(extra: dict[str, str]) -> dict[str, str]:
    """testbed/procs.py's one environment rule (this tree first on PYTHONPATH), TensorFlow quiet unless asked."""
    return procs.base_env({"TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3"), **extra}, (ROOT,))


def materialise(test_file: str, dest: Path) -> Path:
    """Write the rewritten test file and its helpers under dest/test; returns the test's path."""
    names = subprocess.run(["git", "-C", str(MIRROR), "ls-tree", "--name-only", f"{TAG}", "test/parallel/"],
                           check=True, capture_output=True, text=True).stdout.split()
    wanted = [f"test/parallel/{test_file}", "test/utils/common.py", "test/conftest.py"]
    wanted += [n for n in names if Path(n).name.startswith("base_test_")]
    for name in wanted:
        out = dest / name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(rewrite(git_show(name)))
    (dest / "test" / "parallel" / "_suite_support.py").write_text(_SUPPORT)
    (dest / "test" / "parallel" / "_suite_report.py").write_text(_PLUGIN)
    if _module_missing("mock"):
        (dest / "test" / "parallel" / "mock.py").write_text(_MOCK)
    return dest / "test" / "parallel" / test_file


def collect(out_dir: Path, np_: int) -> dict[str, dict[str, str]]:
    """{test: {"outcome": ..., "msg": ...}} merged over ranks (see the module docstring)."""
    per_rank: list[dict[str, dict[str, str]]] = []
    for r in range(np_):
        tests: dict[str, dict[str, str]] = {}
        path = out_dir / f"rank{r}.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        for line in lines:
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue
            t = tests.setdefault(e["test"], {"outcome": "hung", "msg": ""})
            if e["event"] == "start":
                continue
            if e["outcome"] == "failed":
                t.update(outcome="failed", msg=e["msg"])
            elif e["outcome"] == "skipped" and t["outcome"] != "failed":
                t.update(outcome="skipped", msg=e["msg"])
            elif e["event"] == "call" and t["outcome"] == "hung":
                t["outcome"] = "passed"
        per_rank.append(tests)
    merged: dict[str, dict[str, str]] = {}
    for name in sorted({t for tests in per_rank for t in tests}):
        seen = [tests.get(name, {"outcome": "hung", "msg": "never started on this rank"}) for tests in per_rank]
        for kind in ("failed", "hung", "passed", "skipped"):
            hit = [s for s in seen if s["outcome"] == kind]
            if hit:
                merged[name] = {"outcome": kind, "msg": hit[0]["msg"]}
                break
    return merged


def run_suite(test_file: str, np_: int = 2, keras: str = "keras3", select: str | None = None,
              per_test_timeout: int = 300, timeout: int = 3000, keep: Path | None = None,
              pytest_args: list[str] | None = None) -> dict[str, dict[str, str]]:
    """Run the suite and return the merged per-test outcomes (also printing a summary)."""
    tmp = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="horovod_suite_"))
    tmp.mkdir(parents=True, exist_ok=True)
    test_path = materialise(test_file, tmp)
    out_dir = tmp / "results"
    out_dir.mkdir(exist_ok=True)
    for f in out_dir.glob("rank*.jsonl"):
        f.unlink()
    extra = {"HOROVOD_SUITE_OUT": str(out_dir)}
    if keras == "tf-keras":
        extra["TF_USE_LEGACY_KERAS"] = "1"
    cmd = [sys.executable, "-m", "lightcc.runner.launch", "-np", str(np_), sys.executable, "-m", "pytest",
           str(test_path), "-q", "-p", "no:cacheprovider", "-p", "_suite_report", "--rootdir", str(tmp / "test"),
           f"--timeout={per_test_timeout}", "-o", "timeout_func_only=true"]
    if select:
        cmd += ["-k", select]
    cmd += list(pytest_args or [])
    start = time.monotonic()
    with open(tmp / "output.log", "w") as log:
        proc = procs.start(cmd, _env(extra), test_path.parent, stdout=log, stderr=subprocess.STDOUT)
        # Past the timeout every rank's stacks go into the log (which test hung, where), then the tree is
        # killed; outcomes come from the per-event rank*.jsonl, so a test cut short reads as `hung`.
        _, hung = procs.wait([proc], timeout)
        rc = -1 if hung else proc.returncode
    results = collect(out_dir, np_)
    counts = summarize(results)
    print(f"{test_file} ({keras}, {np_} ranks): {counts} rc={rc} in {time.monotonic() - start:.0f}s; "
          f"log {tmp / 'output.log'}")
    return results


def summarize(results: dict[str, dict[str, str]]) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "skipped": 0, "hung": 0}
    for r in results.values():
        counts[r["outcome"]] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("test_file", help="a file of Horovod's test/parallel, e.g. test_tensorflow.py")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--keras", choices=["keras3", "tf-keras"], default="keras3",
                   help="tf-keras sets TF_USE_LEGACY_KERAS=1 (default: Keras 3)")
    p.add_argument("-k", dest="select", help="pytest -k expression")
    p.add_argument("--per-test-timeout", type=int, default=300, help="pytest-timeout per test (seconds)")
    p.add_argument("--timeout", type=int, default=3000, help="hard limit for the whole run (seconds)")
    p.add_argument("--json", type=Path, help="write {test: {outcome, msg}} here")
    p.add_argument("--keep", type=Path, help="materialise into this directory instead of a temporary one")
    p.add_argument("-v", "--verbose", action="store_true", help="print every test's outcome")
    p.add_argument("pytest_args", nargs="*", help="after --: extra pytest arguments")
    a = p.parse_args(argv)
    results = run_suite(a.test_file, a.np, a.keras, a.select, a.per_test_timeout, a.timeout, a.keep, a.pytest_args)
    for name, r in results.items():
        if a.verbose or r["outcome"] in ("failed", "hung"):
            first = r["msg"].strip().splitlines()[0][:200] if r["msg"].strip() else ""
            print(f"  {r['outcome']:7s} {name.split('::', 1)[-1]}  {first}")
    if a.json:
        a.json.write_text(json.dumps(results, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
