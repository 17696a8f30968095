"""PyTorch's backend-generic suite (from the installed torch wheel), whole, on gloo and on lightcc in the same run.

Every test that passes on gloo must pass on lightcc. The suite gates some tests by the backend's
name ("requires backend to be one of {'gloo'}", "get_future is only supported on mpi, nccl and
gloo"), so on BACKEND=lightcc they skip whatever lightcc can do; those run a third time with the
gates reading gloo and lightcc underneath (the runner's --served-by), and must pass there, but for
the ones torch itself implements only inside gloo (GLOO_ONLY_IN_TORCH, each with torch's reason).
Ranks are forked per test (the runner's default), about a second a test.
"""
from __future__ import annotations

import re
import sys

import pytest

from testbed import procs
from tests.ranks import ROOT

pytest.importorskip("expecttest")

RESULT = re.compile(r"^RESULT (test_\w+) (ok|FAIL|ERROR|skipped)$", re.MULTILINE)  # the runner's line per test
# Tests torch runs on gloo only because torch implements what they test only inside gloo.
GLOO_ONLY_IN_TORCH = {
    "test_monitored_barrier_gloo": "monitored_barrier: 'only implemented for GLOO backend' (distributed_c10d)",
    "test_monitored_barrier_gloo_rank_0_timeout": "monitored_barrier, as above",
    "test_monitored_barrier_gloo_subgroup": "monitored_barrier, as above",
}


def _run(backend: str, served_by: str = "", tests: list[str] = ()) -> dict[str, str]:
    env = procs.base_env({"BACKEND": backend, "WORLD_SIZE": "2", "OMP_NUM_THREADS": "1"})
    args = [sys.executable, "-m", "benchmarks.compat.torch_distributed_suite", "--backend", backend]
    if served_by:
        args += ["--served-by", served_by]
    for name in tests:
        args += ["--test", name]
    proc = procs.run(args, 1500, env, ROOT)  # a hang dumps every rank's stacks and fails
    text = proc.stdout + proc.stderr
    found = {m.group(1): m.group(2) for m in RESULT.finditer(text)}
    assert found, text[-4000:]
    return found


def test_every_suite_test_that_passes_on_gloo_passes_on_lightcc():
    gloo, lightcc = _run("gloo"), _run("lightcc")
    assert sorted(gloo) == sorted(lightcc), (len(gloo), len(lightcc))
    passing = sorted(t for t, v in gloo.items() if v == "ok")
    regressions = {t: lightcc[t] for t in passing if lightcc[t] in ("FAIL", "ERROR")}
    assert not regressions, regressions
    gated = [t for t in passing if lightcc[t] == "skipped"]
    served = _run("gloo", served_by="lightcc", tests=gated) if gated else {}
    failing_served = {t: v for t, v in served.items() if v != "ok" and t not in GLOO_ONLY_IN_TORCH}
    print(f"{len(gloo)} tests; gloo passes {len(passing)}, lightcc {sum(v == 'ok' for v in lightcc.values())}; "
          f"gated to other backends by name: {len(gated)}, of which lightcc passes "
          f"{sum(v == 'ok' for v in served.values())} with the gates reading gloo: {served}")
    assert not failing_served, failing_served
    stale = [t for t in GLOO_ONLY_IN_TORCH if served.get(t) == "ok"]
    assert not stale, f"these pass on lightcc now: take them out of GLOO_ONLY_IN_TORCH: {stale}"
    assert sum(v == "ok" for v in lightcc.values()) + sum(v == "ok" for v in served.values()) >= len(passing) - len(
        GLOO_ONLY_IN_TORCH)
