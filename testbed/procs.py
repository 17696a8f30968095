"""Starts the processes of tests and benchmarks: one environment rule, own sessions, hard timeouts, stacks on a hang.

The one way ranks and launchers are started for tests/, benchmarks/ and testbed/ (issue 45). The
process lifecycle — sessions of their own, hard timeouts, stacks on a hang, whole trees killed,
cleanup on any exception — is the installed package's `lightcc.runner.processes` (lightcc-bench
runs its workers through it too); this module adds what is particular to tests:

- Environment (`base_env`, `rank_env`): the parent's environment less every variable a launcher or a
  scheduler sets (Open MPI, PMI, Slurm, torchrun, Kubeflow, Lightning) and every lightcc, Horovod
  and HARP flag, so a run depends only on what its caller passes (a benchmark that honours the
  shell's flags passes `user_flags()` on purpose); PYTHONPATH is the tree under test first, then
  the parent's; output unbuffered; faulthandler on in every Python process (PYTHONFAULTHANDLER,
  inherited through launchers). `rank_env` adds one rank's LIGHTCC_RANK, LIGHTCC_SIZE,
  LIGHTCC_HOSTNAME, LIGHTCC_RENDEZVOUS_ADDR and LIGHTCC_JOB_SECRET.
- Starting (`start`, `start_all`): `processes.start` with text pipes, no input, the repository as
  the working directory and the rule's environment by default.
- Stopping and waiting (`stop`, `stop_all`, `wait`, `descendants`, `alive`): `lightcc.runner.processes`'s.
- Hard timeouts as test failures (`run`, `run_all`): a process still running at its deadline is
  stopped (stacks dumped) and the run fails with `Hung` (an AssertionError carrying its output).

Ranks of one job: tests/ranks.py (local ranks of tests/parallel/workers), testbed/cluster.py
(ranks on emulated hosts), testbed/elastic_job.py (lightccrun in elastic mode); all three start
and stop their processes here.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Mapping, Sequence

from lightcc.common.launch_info import free_port  # noqa: F401  (re-exported for the harness's callers)
from lightcc.runner import processes
from lightcc.runner.processes import (  # noqa: F401  (the lifecycle, for the harness's callers)
    DUMP_GRACE_S,
    PathLike,
    Stream,
    alive,
    descendants,
    stop,
    stop_all,
    wait,
)

ROOT = Path(__file__).resolve().parents[1]
# What launchers and schedulers set (a test run under mpirun, srun or torchrun must not pass its
# own placement to the ranks it starts) and lightcc's, Horovod's and HARP's flags (a run's flags are
# what its caller passes, never what the shell that ran pytest happened to export).
STRIPPED_PREFIXES = ("OMPI_", "PMI_", "PMIX_", "SLURM", "PET_", "TORCHELASTIC_", "PL_",
                     "LIGHTCC_", "LIGHT_", "HOROVOD_", "HARP_")
STRIPPED_NAMES = frozenset(("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                            "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))
# The variables that place one process in a job: never passed on by `user_flags`.
PLACEMENT = frozenset([f"{pre}_{name}" for pre in ("LIGHTCC", "HOROVOD")
                       for name in ("RANK", "SIZE", "LOCAL_RANK", "LOCAL_SIZE", "CROSS_RANK", "CROSS_SIZE", "HOSTNAME")]
                      + ["LIGHTCC_RENDEZVOUS_ADDR", "LIGHTCC_JOB_SECRET", "LIGHTCC_ELASTIC_WORKER"])
FLAG_PREFIXES = ("LIGHT_", "LIGHTCC_", "HOROVOD_", "HARP_")
TAIL = 4000


class Hung(AssertionError):
    """A process ran past its hard timeout; it was stopped (stacks dumped) and the message carries its output."""




def base_env(extra: Mapping[str, str] | None = None, pythonpath: Sequence[PathLike] = (ROOT,)) -> dict[str, str]:
    """The one environment rule (see the module's docstring): the parent's, stripped, plus `extra`.

    `pythonpath` goes first on PYTHONPATH (the tree under test, then any helpers), the parent's
    entries after it. `extra` is applied last, so a caller may set any variable, PYTHONPATH too."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(STRIPPED_PREFIXES) and k not in STRIPPED_NAMES}
    paths: list[str] = []
    for p in [*map(str, pythonpath), *out.get("PYTHONPATH", "").split(os.pathsep)]:
        if p and p not in paths:
            paths.append(p)
    out.update({"PYTHONPATH": os.pathsep.join(paths), "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"})
    out.update(extra or {})
    return out


def user_flags() -> dict[str, str]:
    """This process's lightcc, Horovod and HARP flags, less any placement: for a benchmark whose user sets
    flags in the shell, to pass as `extra` (the rule itself passes none on)."""
    return {k: v for k, v in os.environ.items() if k.startswith(FLAG_PREFIXES) and k not in PLACEMENT}


def rank_env(rank: int, size: int, rendezvous: str, secret: str, hostname: str,
             extra: Mapping[str, str] | None = None, pythonpath: Sequence[PathLike] = (ROOT,)) -> dict[str, str]:
    """`base_env` for rank `rank` of `size`: its lightcc placement variables, then `extra` (which may override them)."""
    placed = {"LIGHTCC_RANK": str(rank), "LIGHTCC_SIZE": str(size), "LIGHTCC_HOSTNAME": hostname,
              "LIGHTCC_RENDEZVOUS_ADDR": rendezvous, "LIGHTCC_JOB_SECRET": secret}
    return base_env({**placed, **(extra or {})}, pythonpath)


def python(*args: str, prefix: Sequence[str] = ()) -> list[str]:
    """The command line of `python -X faulthandler ARGS` (this interpreter) behind `prefix` (e.g. `ip netns exec h`)."""
    return [*prefix, sys.executable, "-X", "faulthandler", *args]


def _interruptible() -> None:
    """Lets children be interrupted even when this process ignores SIGINT.

    A non-interactive shell starts background jobs with SIGINT ignored, and an ignored signal stays
    ignored across exec. A test run started that way would pass that on, so `interrupt` would reach
    children that cannot clean up (a harness holding network namespaces would leak them). Python's
    own handler, put back here, is reset to the default in every child.
    """
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def start(cmd: Sequence[str], env: Mapping[str, str] | None = None, cwd: PathLike | None = ROOT,
          stdout: Stream = subprocess.PIPE, stderr: Stream = subprocess.PIPE,
          stdin: Stream = subprocess.DEVNULL) -> subprocess.Popen:
    """`processes.start` with the harness's defaults: text pipes, no input, the repository as the working
    directory and the rule's environment (`base_env()`) unless `env` is given."""
    _interruptible()
    return processes.start(cmd, env if env is not None else base_env(), cwd, stdout, stderr, stdin)


def start_all(cmds: Sequence[Sequence[str]], envs: Sequence[Mapping[str, str] | None], cwd: PathLike | None = ROOT,
              stdout: Stream = subprocess.PIPE, stderr: Stream = subprocess.PIPE) -> list[subprocess.Popen]:
    """`processes.start_all` with `start`'s defaults (an environment left None is the rule's)."""
    _interruptible()
    return processes.start_all(cmds, [e if e is not None else base_env() for e in envs], cwd, stdout, stderr,
                               subprocess.DEVNULL)


def tail(text: str, chars: int = TAIL) -> str:
    """The last `chars` of a process's output, less faulthandler's list of extension modules: printed
    after a hung process's stacks, that one line (thousands of characters) pushed them out of the tail."""
    kept = [line for line in text.splitlines(keepends=True) if not line.startswith("Extension modules:")]
    return "".join(kept)[-chars:]


def describe(cmd: Sequence[str], returncode: int | None, out: str, err: str) -> str:
    """A failure message's part for one process: its command, exit status and output tails."""
    return f"--- `{' '.join(map(str, cmd))[:300]}` (exit {returncode})\n{tail(out)}\n{tail(err)}"


def run_all(cmds: Sequence[Sequence[str]], envs: Sequence[Mapping[str, str] | None], timeout: float,
            cwd: PathLike | None = ROOT, merge: bool = False,
            interrupt: float = 0.0) -> list[subprocess.CompletedProcess]:
    """Runs the commands at once, each in its own session, to the end; each one's result.

    `merge` puts stderr into stdout. Any still running after `timeout` s: every one is stopped
    (stacks dumped; `interrupt` as in `stop`) and `Hung` names them with every process's output."""
    started = start_all(cmds, envs, cwd, stderr=subprocess.STDOUT if merge else subprocess.PIPE)
    outs, hung = wait(started, timeout, interrupt)
    done = [subprocess.CompletedProcess(list(c), p.returncode, o, e) for c, p, (o, e) in zip(cmds, started, outs)]
    if hung:
        raise Hung(f"{len(hung)} of {len(cmds)} processes ran past {timeout:g} s (stacks dumped):\n"
                   + "\n".join(describe(r.args, r.returncode, r.stdout, r.stderr) for r in done))
    return done


def run(cmd: Sequence[str], timeout: float, env: Mapping[str, str] | None = None, cwd: PathLike | None = ROOT,
        merge: bool = False, interrupt: float = 0.0) -> subprocess.CompletedProcess:
    """Runs one command (a launcher, a benchmark's front end) to the end in its own session; its result.

    `env` defaults to the rule's (`base_env()`); `merge` puts stderr into stdout. Past `timeout` s the
    whole tree is stopped (stacks dumped; with `interrupt`, the command itself gets SIGINT and that
    many seconds to clean up, as in `stop`) and `Hung` carries its output."""
    return run_all([cmd], [env], timeout, cwd, merge, interrupt)[0]

