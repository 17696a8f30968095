"""Runs PyTorch's backend-generic suite from the installed torch wheel against one backend.

    BACKEND=lightcc python -m benchmarks.compat.torch_distributed_suite --backend lightcc [-k EXPR] [--test NAME]
        [--list] [--start fork|spawn]

The suite is `DistributedTest._DistTestBase` in torch.testing._internal.distributed.distributed_test,
which ships in the torch wheel; this runner only sets the environment it reads at import
(BACKEND, WORLD_SIZE, TEMP_DIR), claims the features the backend has, and runs it the way
torch's own test_distributed_spawn.py does, each test in WORLD_SIZE new processes: forked from
this one by default (the whole suite in about a minute a backend), or spawned (`--start spawn`,
torch's own way, about ten times slower). Nothing of torch's is copied. Results print as
unittest's, then one "RESULT name outcome" line a test, ending in one "N passed, N failed, N
skipped" line.

Beside benchmarks/compat/horovod_suite.py, which does the same with Horovod's own tests: the published
counts (docs/results.md) come from here, and tests/parallel/test_torch_suite.py runs it in CI.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import unittest

# Read by torch's suite at import, in this process and in every process it spawns (which re-import
# this module), so they are set before anything imports it.
os.environ.setdefault("BACKEND", "lightcc")
os.environ.setdefault("WORLD_SIZE", "2")
if "TEMP_DIR" not in os.environ:
    os.environ["TEMP_DIR"] = tempfile.mkdtemp(prefix="lightcc-torch-suite-")
os.makedirs(os.path.join(os.environ["TEMP_DIR"], "barrier"), exist_ok=True)

import torch  # noqa: E402
from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

if os.environ["BACKEND"] == "lightcc":
    # The suite's any-source tests receive with src=None, which lightcc serves when sends announce
    # themselves in torch's store (off by default: a store round trip per send).
    os.environ.setdefault("LIGHTCC_P2P_ANY_SOURCE", "1")
    import lightcc.torch  # noqa: E402,F401  (registers the backend where torch's autoload is off)

    # What lightcc claims: a plug-in backend that runs DDP and subgroups (CPU only here).
    for feature in ("plugin", "ddp", "subgroup"):
        DistTestCases.backend_feature[feature].add("lightcc")

from torch.testing._internal.distributed.distributed_test import DistributedTest, TestDistBackend  # noqa: E402


# How each test starts its ranks (set by main, read in this process only: setUp runs here).
START = {"method": "fork"}
# Set to a backend's name, the ranks serve every group asked of BACKEND with it (see _serve_with).
SERVED_BY_VAR = "TORCH_SUITE_SERVED_BY"


def _serve_with(backend: str) -> None:
    """Makes every group this rank asks of BACKEND a `backend` group instead.

    The suite gates some tests by the backend's name ("requires backend to be one of {'gloo'}",
    "get_future is only supported on mpi, nccl and gloo"), whatever the backend can do. With
    BACKEND=gloo those gates open, and this puts lightcc underneath: init_process_group and
    new_group calls naming gloo (or naming no backend) get lightcc, so the test body runs against
    lightcc while the gate reads gloo.
    """
    import torch.distributed as dist

    import lightcc.torch  # noqa: F401  (registers the backend)

    asked = os.environ["BACKEND"]

    def swap(kwargs: dict, args: tuple, index: int) -> tuple:
        if "backend" in kwargs:
            if kwargs["backend"] in (None, asked):
                kwargs["backend"] = backend
        elif len(args) > index and args[index] in (None, asked):
            args = args[:index] + (backend,) + args[index + 1:]
        elif len(args) <= index:
            kwargs["backend"] = backend
        return args

    real_init, real_new = dist.init_process_group, dist.new_group

    def init_process_group(*args, **kwargs):
        return real_init(*swap(kwargs, args, 0), **kwargs)

    def new_group(*args, **kwargs):
        return real_new(*swap(kwargs, args, 2), **kwargs)

    dist.init_process_group, dist.new_group = init_process_group, new_group


class TestDistBackendInProcesses(TestDistBackend, DistributedTest._DistTestBase):
    """torch's suite, each test's ranks forked from this process (as torch's former
    test_distributed_fork.py did: a second a test) or spawned afresh (as test_distributed_spawn.py
    does: about ten seconds a test here, most of it importing torch)."""

    def setUp(self) -> None:
        super().setUp()
        if START["method"] == "fork":
            self._start_processes(torch.multiprocessing.get_context("fork").Process)
        else:
            self._spawn_processes()
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()

    @classmethod
    def _run(cls, rank, test_name, file_name, pipe, **kwargs):  # noqa: ANN001,ANN206  (torch's signature)
        """A rank: torch's own, after putting the serving backend underneath when one is asked for."""
        if os.environ.get(SERVED_BY_VAR):
            _serve_with(os.environ[SERVED_BY_VAR])
        super()._run(rank, test_name, file_name, pipe, **kwargs)


class _Counting(unittest.TextTestResult):
    """unittest's result, also keeping each test's outcome for one machine-readable line a test."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.outcomes: dict[str, str] = {}

    def _note(self, test: unittest.TestCase, outcome: str) -> None:
        self.outcomes[test.id().rsplit(".", 1)[-1]] = outcome

    def addSuccess(self, test):  # noqa: N802  (unittest's names)
        super().addSuccess(test)
        self._note(test, "ok")

    def addFailure(self, test, err):  # noqa: N802
        super().addFailure(test, err)
        self._note(test, "FAIL")

    def addError(self, test, err):  # noqa: N802
        super().addError(test, err)
        self._note(test, "ERROR")

    def addSkip(self, test, reason):  # noqa: N802
        super().addSkip(test, reason)
        self._note(test, "skipped")

    def addUnexpectedSuccess(self, test):  # noqa: N802
        super().addUnexpectedSuccess(test)
        self._note(test, "FAIL")

    def summary(self) -> str:
        failed = len(self.failures) + len(self.errors) + len(self.unexpectedSuccesses)
        passed = self.testsRun - failed - len(self.skipped)
        return f"{passed} passed, {failed} failed, {len(self.skipped)} skipped"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=os.environ["BACKEND"], help="must match $BACKEND (set before import)")
    parser.add_argument("-k", action="append", default=[], help="run tests whose name contains EXPR (repeatable)")
    parser.add_argument("--test", action="append", default=[], help="run the test named exactly NAME (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the selected tests and exit")
    parser.add_argument("--start", choices=("fork", "spawn"), default="fork",
                        help="how each test starts its ranks (default fork: nothing in this process has "
                             "started a group or an engine to inherit)")
    parser.add_argument("--served-by", default="",
                        help="run each rank's groups on this backend while the suite's name gates read "
                             "$BACKEND (BACKEND=gloo ... --served-by lightcc: the tests torch gates to gloo, "
                             "on lightcc)")
    args = parser.parse_args(argv)
    START["method"] = args.start
    if args.served_by:
        os.environ[SERVED_BY_VAR] = args.served_by  # read by every rank, forked or spawned
    if args.backend != os.environ["BACKEND"]:
        parser.error(f"--backend {args.backend} but BACKEND={os.environ['BACKEND']}: set BACKEND before running")
    loader = unittest.TestLoader()
    if args.k or args.test:
        loader.testNamePatterns = [f"*{k}*" for k in args.k] + [f"*.{name}" for name in args.test]
    suite = loader.loadTestsFromTestCase(TestDistBackendInProcesses)
    if args.list:
        for test in suite:
            print(test.id().rsplit(".", 1)[-1])
        return 0
    runner = unittest.TextTestRunner(verbosity=2, resultclass=_Counting)
    result = runner.run(suite)
    for name, outcome in sorted(result.outcomes.items()):
        print(f"RESULT {name} {outcome}", flush=True)
    print(f"{args.backend}: {result.summary()}", flush=True)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
