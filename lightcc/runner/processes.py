"""Runs process trees to their end or their deadline: own sessions, hard timeouts, stacks on a hang, whole trees killed.

The one process lifecycle behind lightcc-bench (lightcc/bench/launch.py) and the test and
benchmark harness (testbed/procs.py, which adds its environment rule and repository paths):

- Starting (`start`, `start_all`): every process in a session (and process group) of its own, so
  that a terminal's Ctrl-C reaches only the caller, and its tree can be found and ended as a whole.
- Waiting (`wait`): for several processes together until one deadline, reading their pipes so a
  chatty child never blocks, with an optional `poll` callback while they run (a progress bar).
- Stopping (`stop`, `stop_all`): SIGABRT to every Python process of each tree first, deepest
  first (a launcher lives to relay its ranks' output), so that faulthandler (PYTHONFAULTHANDLER=1,
  or `-X faulthandler`) prints where each thread was; after a grace period, SIGKILL to the process
  group of every process in the tree — a launcher's ranks in sessions of their own included, and
  ranks that outlived their launcher in its group.
- Cleanup: whatever raises inside `wait` (KeyboardInterrupt included), nothing it waited on is
  left running.

Trees are read from /proc (Linux). lightccrun's own rank handling (spawn.py) is the product's
launcher and stays apart: it forwards signals to ranks and prefixes their output.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import IO, Callable, Iterable, Mapping, Sequence, Union

# How long the Python processes of a hung tree get to print their stacks after SIGABRT before SIGKILL.
DUMP_GRACE_S = 5.0
# How long a launcher whose ranks were aborted gets to relay their stacks and exit before it is aborted too.
RELAY_S = 1.0
# How often `wait` calls its `poll` callback while the processes run.
POLL_INTERVAL_S = 0.2

PathLike = Union[str, Path]
Stream = Union[int, IO, None]


def start(cmd: Sequence[str], env: Mapping[str, str] | None = None, cwd: PathLike | None = None,
          stdout: Stream = None, stderr: Stream = None, stdin: Stream = None) -> subprocess.Popen:
    """Starts `cmd` in a session of its own, pipes (if any) as text; `env` None inherits this process's.

    Streams left None are inherited (a tool's workers print straight to its terminal)."""
    return subprocess.Popen(list(cmd), env=dict(env) if env is not None else None,
                            cwd=str(cwd) if cwd is not None else None, stdin=stdin, stdout=stdout,
                            stderr=stderr, text=True, start_new_session=True)


def start_all(cmds: Sequence[Sequence[str]], envs: Sequence[Mapping[str, str] | None], cwd: PathLike | None = None,
              stdout: Stream = None, stderr: Stream = None, stdin: Stream = None) -> list[subprocess.Popen]:
    """`start` for each command with its environment; if one cannot start, the ones started are stopped."""
    started: list[subprocess.Popen] = []
    try:
        for cmd, env in zip(cmds, envs):
            started.append(start(cmd, env, cwd, stdout, stderr, stdin))
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


def alive(pids: Iterable[int]) -> list[int]:
    """Those of `pids` that still run (zombies count as ended)."""
    return [pid for pid in pids if _alive(pid)]


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


def _wait_gone(pids: Sequence[int], timeout: float) -> None:
    """Until none of `pids` runs, or `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)


def _layers(pid: int) -> list[list[int]]:
    """The live tree below `pid` by depth: its children, then theirs, ... (`pid` itself not included)."""
    layers: list[list[int]] = []
    below = descendants(pid)
    seen = {pid}
    while below:
        layer = [c for c in below if _parent(c) in seen]
        if not layer:  # reparented while we looked: what is left is one more layer
            layer = below
        layers.append(layer)
        seen.update(layer)
        below = [c for c in below if c not in seen]
    return layers


def _parent(pid: int) -> int:
    """`pid`'s parent (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(") ", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _abort(layers: Sequence[Sequence[int]], grace: float) -> None:
    """SIGABRT to each Python process of `layers`, deepest layer first; up to `grace` s in all for them to end.

    A launcher relays its ranks' output (lightccrun reads their pipes): aborted together, it would
    die before it passed on their stacks. So each layer prints and ends before the one above is
    hit, and a layer above gets up to RELAY_S to pass the stacks on and exit on its own first."""
    deadline = time.monotonic() + grace
    for depth, layer in enumerate(reversed(layers)):
        if depth:  # every process of the layer, mpirun too: it relays its ranks' output as lightccrun does
            _wait_gone(layer, min(RELAY_S, deadline - time.monotonic()))
        pythons = [pid for pid in layer if _is_python(pid)]
        for pid in alive(pythons):
            _signal(pid, signal.SIGABRT)
        _wait_gone(pythons, deadline - time.monotonic())


def stop(proc: subprocess.Popen, dump: bool = True, grace: float = DUMP_GRACE_S, interrupt: float = 0.0) -> None:
    """Ends `proc`, its process group and every process below it; reaps `proc` (its pipes are left to the caller).

    With `dump`, every Python process of the tree first gets SIGABRT (faulthandler prints each
    thread's stack on its stderr) and up to `grace` seconds to do so. With `interrupt` > 0,
    `proc` itself gets SIGINT instead, after the others' dumps, and that many seconds to clean up
    (a harness that owns network namespaces removes them on KeyboardInterrupt)."""
    stop_all([proc], dump, grace, interrupt)


def stop_all(started: Sequence[subprocess.Popen], dump: bool = True, grace: float = DUMP_GRACE_S,
             interrupt: float = 0.0) -> None:
    """`stop` for several processes at once: one grace period for all their stack dumps."""
    # The trees are read before any signal: a launcher that dies first orphans its ranks out of reach.
    layers = {p.pid: [[p.pid], *_layers(p.pid)] for p in started}
    trees = {pid: [q for layer in tree for q in layer] for pid, tree in layers.items()}
    running = [p for p in started if p.poll() is None]
    if dump:
        by_depth: list[list[int]] = []  # every tree's layer d together: one wait per depth, not per tree
        for p in running:
            for d, layer in enumerate(layers[p.pid]):
                by_depth += [[] for _ in range(d + 1 - len(by_depth))]
                by_depth[d] += layer
        _abort(by_depth[1:] if interrupt else by_depth, grace)  # an interrupted command is not aborted
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


def drain(proc: subprocess.Popen) -> tuple[str, str]:
    """What is left on `proc`'s pipes once it ended ("" for a stream that is not a pipe)."""
    try:
        out, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:  # a process outside the tree holds the pipe: take what came
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        out, err = "", ""
    return out or "", err or ""


def _until(proc: subprocess.Popen, deadline: float, poll: Callable[[], object] | None,
           every: float) -> tuple[str, str] | None:
    """`proc`'s output once it ended, or None if it still runs at `deadline`; `poll()` every `every` s meanwhile."""
    while True:
        left = deadline - time.monotonic()
        try:
            # At least 0.1 s: a process checked after the deadline passed still gets a moment to be seen ending.
            out, err = proc.communicate(timeout=max(0.1, left if poll is None else min(left, every)))
            return out or "", err or ""
        except subprocess.TimeoutExpired:  # communicate may be called again without losing output
            if time.monotonic() >= deadline:
                return None
            if poll is not None:
                poll()


def wait(started: Sequence[subprocess.Popen], timeout: float, interrupt: float = 0.0,
         poll: Callable[[], object] | None = None,
         every: float = POLL_INTERVAL_S) -> tuple[list[tuple[str, str]], list[int]]:
    """Waits for `started` together until `timeout` s from now; stops (stacks dumped) those still running.

    Returns each process's (stdout, stderr) ("" where not piped) and the indices of those that
    were still running at the deadline (`interrupt` as in `stop`). `poll`, if given, is called
    every `every` s while they run. Every one has ended when it returns or raises."""
    deadline = time.monotonic() + timeout
    outs: list[tuple[str, str]] = []
    hung: list[int] = []
    try:
        for i, p in enumerate(started):
            if p.stdin is not None and p.stdin.closed:
                p.stdin = None  # the caller closed it (end of input): communicate would flush it
            done = _until(p, deadline, poll, every)
            if done is None:
                hung.append(i)
            outs.append(done or ("", ""))
        stop_all([started[i] for i in hung], interrupt=interrupt)
        for i in hung:
            outs[i] = drain(started[i])
    finally:
        for p in started:
            if p.poll() is None:  # an exception above (a poll that raised, Ctrl-C): nothing is left running
                stop(p, dump=False)
    return outs, hung
