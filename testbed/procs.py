"""Starts the processes of tests and benchmarks: one environment rule, own sessions, hard timeouts, stacks on a hang.

The one way ranks and launchers are started for tests/, benchmarks/ and testbed/ (issue 45):

- Environment (`base_env`, `rank_env`): the parent's environment less every variable a launcher or a
  scheduler sets (Open MPI, PMI, Slurm, torchrun, Kubeflow, Lightning) and every lightcc, Horovod
  and HARP flag, so a run depends only on what its caller passes (a benchmark that honours the
  shell's flags passes `user_flags()` on purpose); PYTHONPATH is the tree under test first, then
  the parent's; output unbuffered; faulthandler on in every Python process (PYTHONFAULTHANDLER,
  inherited through launchers). `rank_env` adds one rank's LIGHTCC_RANK, LIGHTCC_SIZE,
  LIGHTCC_HOSTNAME, LIGHTCC_RENDEZVOUS_ADDR and LIGHTCC_JOB_SECRET.
- Starting (`start`): every process in a session (and process group) of its own, pipes as text.
- Stopping (`stop`): SIGABRT to every Python process of the process's tree first, so faulthandler
  prints where each thread was; after a grace period, SIGKILL to the process group of each
  process in the tree (a launcher's ranks in sessions of their own included).
- Hard timeouts (`wait`, `run`, `run_all`): a process still running at its deadline is stopped as
  above and the run fails with `Hung` (an AssertionError carrying its output, stacks included).

Ranks of one job: tests/ranks.py (local ranks of tests/parallel/workers), testbed/cluster.py
(ranks on emulated hosts), testbed/elastic_job.py (lightccrun in elastic mode); all three start
and stop their processes here.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Iterable, Mapping, Sequence, Union

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
# How long the processes of a hung run get to print their stacks after SIGABRT before SIGKILL.
DUMP_GRACE_S = 5.0
TAIL = 4000

PathLike = Union[str, Path]
Stream = Union[int, IO, None]


class Hung(AssertionError):
    """A process ran past its hard timeout; it was stopped (stacks dumped) and the message carries its output."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def start(cmd: Sequence[str], env: Mapping[str, str] | None = None, cwd: PathLike | None = ROOT,
          stdout: Stream = subprocess.PIPE, stderr: Stream = subprocess.PIPE,
          stdin: Stream = subprocess.DEVNULL) -> subprocess.Popen:
    """Starts `cmd` in a session of its own (text pipes by default); `env` defaults to the rule's (`base_env()`)."""
    return subprocess.Popen(list(cmd), env=dict(env) if env is not None else base_env(), cwd=cwd,
                            stdin=stdin, stdout=stdout, stderr=stderr, text=True, start_new_session=True)


def start_all(cmds: Sequence[Sequence[str]], envs: Sequence[Mapping[str, str] | None], cwd: PathLike | None = ROOT,
              stdout: Stream = subprocess.PIPE, stderr: Stream = subprocess.PIPE) -> list[subprocess.Popen]:
    """`start` for each command with its environment; if one cannot start, the ones started are stopped."""
    started: list[subprocess.Popen] = []
    try:
        for cmd, e in zip(cmds, envs):
            started.append(start(cmd, e, cwd, stdout, stderr))
    except BaseException:
        stop_all(started, dump=False)
        raise
    return started


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children, theirs, ...), read from /proc; parents before children."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop(0)
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            for c in children:
                if c not in found:
                    found.append(c)
                    todo.append(c)
    return found


def _alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting for its parent counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _is_python(pid: int) -> bool:
    """Whether `pid` runs a Python interpreter (which, under faulthandler, prints its stacks on SIGABRT)."""
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")).startswith("python")
    except OSError:
        return False


def _signal(pid: int, sig: int) -> None:
    """Sends `sig` to `pid`; a process that is gone or not ours is skipped."""
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop(proc: subprocess.Popen, dump: bool = True, grace: float = DUMP_GRACE_S, interrupt: float = 0.0) -> None:
    """Ends `proc`, its process group and every process below it; reaps `proc` (its pipes are left to the caller).

    With `dump`, every Python process of the tree first gets SIGABRT (faulthandler prints each
    thread's stack on its stderr) and up to `grace` seconds to do so. With `interrupt` > 0,
    `proc` itself gets SIGINT instead, after the others' dumps, and that many seconds to clean up
    (a harness that owns network namespaces removes them on KeyboardInterrupt)."""
    stop_all([proc], dump, grace, interrupt)


def _abort(pids: Sequence[int], grace: float) -> None:
    """SIGABRT to each Python process of `pids`; waits up to `grace` s for them to print their stacks and end."""
    pythons = [pid for pid in pids if _is_python(pid)]
    for pid in pythons:
        _signal(pid, signal.SIGABRT)
    _wait_gone(pythons, grace)


def _wait_gone(pids: Sequence[int], timeout: float) -> None:
    """Until none of `pids` runs, or `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)


def stop_all(started: Sequence[subprocess.Popen], dump: bool = True, grace: float = DUMP_GRACE_S,
             interrupt: float = 0.0) -> None:
    """`stop` for several processes at once: one grace period for all their stack dumps."""
    trees = {p.pid: [p.pid, *descendants(p.pid)] for p in started}
    running = [p for p in started if p.poll() is None]
    if dump:
        _abort([pid for p in running for pid in trees[p.pid][1 if interrupt else 0:]], grace)
    if interrupt:
        for p in running:
            _signal(p.pid, signal.SIGINT)
        _wait_gone([p.pid for p in running], interrupt)
    groups = set(trees)  # each session's own group, even once its leader has exited
    for p in started:
        for pid in trees[p.pid][1:] + descendants(p.pid):
            try:
                groups.add(os.getpgid(pid))
            except ProcessLookupError:
                pass
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for p in started:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def _drain(proc: subprocess.Popen) -> tuple[str, str]:
    """What is left on `proc`'s pipes once it ended ("" for a stream that is not a pipe)."""
    try:
        out, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:  # a process outside the tree holds the pipe: take what came
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        out, err = "", ""
    return out or "", err or ""


def wait(started: Sequence[subprocess.Popen], timeout: float,
         interrupt: float = 0.0) -> tuple[list[tuple[str, str]], list[int]]:
    """Waits for `started` together until `timeout` s from now; stops (stacks dumped) those still running.

    Returns each process's (stdout, stderr) ("" where not piped) and the indices of those that
    were still running at the deadline (`interrupt` as in `stop`). Every one has ended when it returns."""
    deadline = time.monotonic() + timeout
    outs: list[tuple[str, str]] = []
    hung: list[int] = []
    try:
        for i, p in enumerate(started):
            if p.stdin is not None and p.stdin.closed:
                p.stdin = None  # the caller closed it (end of input): communicate would flush it
            try:
                out, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
                outs.append((out or "", err or ""))
            except subprocess.TimeoutExpired:
                hung.append(i)
                outs.append(("", ""))
        stop_all([started[i] for i in hung], interrupt=interrupt)
        for i in hung:
            outs[i] = _drain(started[i])
    finally:
        for p in started:
            if p.poll() is None:  # an exception above: nothing is left running
                stop(p, dump=False)
    return outs, hung


def describe(cmd: Sequence[str], returncode: int | None, out: str, err: str) -> str:
    """A failure message's part for one process: its command, exit status and output tails."""
    return f"--- `{' '.join(map(str, cmd))[:300]}` (exit {returncode})\n{out[-TAIL:]}\n{err[-TAIL:]}"


def run_all(cmds: Sequence[Sequence[str]], envs: Sequence[Mapping[str, str] | None], timeout: float,
            cwd: PathLike | None = ROOT, merge: bool = False, interrupt: float = 0.0) -> list[subprocess.CompletedProcess]:
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


def alive(pids: Iterable[int]) -> list[int]:
    """Those of `pids` that still run (zombies count as ended)."""
    return [pid for pid in pids if _alive(pid)]
