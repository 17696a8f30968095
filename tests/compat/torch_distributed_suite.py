"""Runs PyTorch's backend-generic suite from the installed torch wheel against one backend.

    BACKEND=lightcc python -m tests.compat.torch_distributed_suite --backend lightcc [-k EXPR] [--test NAME] [--list]

The suite is `DistributedTest._DistTestBase` in torch.testing._internal.distributed.distributed_test,
which ships in the torch wheel; this runner only sets the environment it reads at import
(BACKEND, WORLD_SIZE, TEMP_DIR), claims the features the backend has, and runs it the way
torch's own test_distributed_spawn.py does: each test spawns WORLD_SIZE processes. Nothing of
torch's is copied. Results print as unittest's, ending in one "N passed, N failed, N skipped" line.
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
    import lightcc.torch  # noqa: E402,F401  (registers the backend where torch's autoload is off)

    # What lightcc claims: a plug-in backend that runs DDP and subgroups (CPU only here).
    for feature in ("plugin", "ddp", "subgroup"):
        DistTestCases.backend_feature[feature].add("lightcc")

from torch.testing._internal.distributed.distributed_test import DistributedTest, TestDistBackend  # noqa: E402


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    """torch's suite, each test in freshly spawned processes (as test_distributed_spawn.py)."""

    def setUp(self) -> None:
        super().setUp()
        self._spawn_processes()
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()


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
    args = parser.parse_args(argv)
    if args.backend != os.environ["BACKEND"]:
        parser.error(f"--backend {args.backend} but BACKEND={os.environ['BACKEND']}: set BACKEND before running")
    loader = unittest.TestLoader()
    if args.k or args.test:
        loader.testNamePatterns = [f"*{k}*" for k in args.k] + [f"*.{name}" for name in args.test]
    suite = loader.loadTestsFromTestCase(TestDistBackendWithSpawn)
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
