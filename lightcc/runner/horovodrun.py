"""``horovodrun``: Horovod's launcher command line, carried out by lightccrun.

Every flag of Horovod's ``horovodrun`` is in :data:`FLAGS` with what happens to it:

* ``same``: lightccrun takes the flag as it is;
* ``env``: exported as the variable lightcc reads (``HOROVOD_*``/``LIGHT*``/``MPI4PY_*``);
* ``env, with a note``: exported likewise, and a note on stderr says how lightcc reads it;
* ``translated``: rewritten into lightccrun's options (for example ``-i`` into the ssh template);
* ``in effect``: what the flag asks for is already how lightcc works; a note says so on stderr;
* ``refused``: lightcc cannot do it; horovodrun exits with 2 and a message saying why and what to
  use instead. Nothing is accepted and dropped in silence.

A switch and its ``--no-`` twin given together are refused (Horovod's parser refuses them too).

Elastic flags (``--min-np``, ``--max-np``, ``--host-discovery-script``, ...) go to lightccrun's
elastic options (each is checked against lightccrun's parser, and refused if it lacks one). ``lightccrun --install-horovodrun`` puts a
``horovodrun`` command beside the Python interpreter (never over Horovod's own);
``python -m lightcc.runner.horovodrun`` works without installing anything.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from dataclasses import dataclass
from typing import Callable, Sequence

from lightcc.runner.env_flags import HIERARCHICAL_ALLGATHER_REFUSED
from lightcc.runner.horovodrun_install import install  # noqa: F401  (lightccrun --install-horovodrun)

SAME, ENV, NOTED, TRANSLATED, IN_EFFECT, REFUSED, ELASTIC = (
    "same",
    "env",
    "env, with a note",
    "translated",
    "in effect",
    "refused",
    "elastic",
)


@dataclass(frozen=True)
class HorovodFlag:
    """One horovodrun flag: its names, whether it takes a value, and how lightcc handles it."""

    names: tuple[str, ...]
    takes_value: bool
    handling: str
    note: str
    env: str = ""  # for ENV: the variable; the value is the flag's (or "1"/"0" for switches)
    value: str = ""  # for ENV switches: the value exported
    nargs: int = 1  # values a value-taking flag takes

    @property
    def dest(self) -> str:
        long = [n for n in self.names if n.startswith("--")] or list(self.names)
        return long[0].lstrip("-").replace("-", "_")


def _flag(
    names: str, value: bool, handling: str, note: str, env: str = "", exported: str = "", nargs: int = 1
) -> HorovodFlag:
    return HorovodFlag(tuple(names.split()), value, handling, note, env, exported, nargs)


FLAGS: tuple[HorovodFlag, ...] = (
    _flag("-v --version", False, TRANSLATED, "prints lightcc's version"),
    _flag("-np --num-proc", True, SAME, "number of processes"),
    _flag("-cb --check-build", False, SAME, "lightcc's build table (kernels vs. a usable GPU)"),
    _flag("-H --hosts", True, SAME, "hosts and slots"),
    _flag("-hostfile --hostfile", True, SAME, "hostfile"),
    _flag("-p --ssh-port", True, SAME, "ssh port of remote hosts"),
    _flag("-i --ssh-identity-file", True, TRANSLATED, "added to ssh (`ssh -i FILE`), and to mpirun's ssh with --mpi"),
    _flag("--gloo", False, SAME, "lightccrun's own launch (the default)"),
    _flag("--mpi", False, SAME, "start the ranks with mpirun"),
    _flag("--jsrun", False, REFUSED, "jsrun (IBM LSF) is not supported: use lightccrun's own launch or --mpi"),
    _flag("--mpi-args", True, SAME, "extra mpirun arguments (with --mpi)"),
    _flag("--output-filename", True, SAME, "per-rank output files"),
    _flag("--verbose", False, SAME, "print the commands that start the ranks"),
    _flag("--disable-cache", False, IN_EFFECT, "lightccrun keeps no cache of host checks: nothing to disable"),
    _flag(
        "--start-timeout",
        True,
        NOTED,
        "lightcc has one timeout for start-up and peers (seconds)",
        "LIGHTCC_TIMEOUT",
    ),
    _flag(
        "--gloo-timeout-seconds",
        True,
        NOTED,
        "lightcc has one timeout for start-up and peers (seconds)",
        "LIGHTCC_TIMEOUT",
    ),
    _flag(
        "--network-interfaces --network-interface",
        True,
        SAME,
        "HARP's interfaces (HARP_IFNAME), the rendezvous address, NCCL and Gloo sockets",
    ),
    _flag(
        "--tcp",
        False,
        TRANSLATED,
        "lightcc's traffic between hosts is TCP already; with --mpi, mpirun also gets `--mca pml ob1 --mca btl ^openib`",
    ),
    _flag("--config-file", True, REFUSED, "config files are not read: give the settings as flags"),
    _flag("--fusion-threshold-mb", True, SAME, "fusion buffer size"),
    _flag("--cycle-time-ms", True, SAME, "cycle time"),
    _flag("--cache-capacity", True, SAME, "response cache entries"),
    _flag("--hierarchical-allreduce", False, SAME, "2D (hierarchical) allreduce"),
    _flag("--no-hierarchical-allreduce", False, ENV, "", "HOROVOD_HIERARCHICAL_ALLREDUCE", "0"),
    _flag("--hierarchical-allgather", False, REFUSED, HIERARCHICAL_ALLGATHER_REFUSED),
    _flag("--no-hierarchical-allgather", False, REFUSED, HIERARCHICAL_ALLGATHER_REFUSED),
    _flag(
        "--torus-allreduce",
        False,
        NOTED,
        "lightcc's 2D allreduce is Horovod's torus schedule (reduce-scatter within the host, allreduce "
        "across hosts, allgather within the host)",
        "HOROVOD_TORUS_ALLREDUCE",
        "1",
    ),
    _flag(
        "--no-torus-allreduce",
        False,
        NOTED,
        "the 2D allreduce still runs where the engine chooses it or LIGHT_2D_ALLREDUCE=1 asks for it",
        "HOROVOD_TORUS_ALLREDUCE",
        "0",
    ),
    _flag("--autotune", False, SAME, "online autotuning (HOROVOD_AUTOTUNE)"),
    _flag("--no-autotune", False, ENV, "", "HOROVOD_AUTOTUNE", "0"),
    _flag("--autotune-log-file", True, SAME, "autotune CSV log"),
    _flag("--autotune-warmup-samples", True, SAME, "autotune warm-up samples"),
    _flag("--autotune-steps-per-sample", True, SAME, "autotune steps per sample"),
    _flag("--autotune-bayes-opt-max-samples", True, SAME, "autotune Bayesian samples"),
    _flag("--autotune-gaussian-process-noise", True, SAME, "autotune Gaussian-process noise"),
    _flag("--timeline-filename", True, SAME, "Chrome-trace timeline"),
    _flag("--timeline-mark-cycles", False, SAME, "mark cycles in the timeline"),
    _flag("--no-timeline-mark-cycles", False, ENV, "", "HOROVOD_TIMELINE_MARK_CYCLES", "0"),
    _flag("--no-stall-check", False, SAME, "stall inspector off"),
    _flag("--stall-check", False, ENV, "", "HOROVOD_STALL_CHECK_DISABLE", "0"),
    _flag("--stall-check-warning-time-seconds", True, SAME, "stall warning time"),
    _flag("--stall-check-shutdown-time-seconds", True, SAME, "stall shutdown time"),
    _flag("--log-level", True, SAME, "log level"),
    _flag(
        "--log-with-timestamp --no-log-hide-timestamp", False, IN_EFFECT, "lightcc's log lines always carry the time"
    ),
    _flag(
        "--log-without-timestamp --log-hide-timestamp",
        False,
        REFUSED,
        "lightcc's log lines always carry the time; it cannot hide it",
    ),
    _flag(
        "-prefix-timestamp --prefix-output-with-timestamp",
        False,
        REFUSED,
        "lightccrun prefixes output with the rank only; pipe through `ts` for times",
    ),
    _flag(
        "--mpi-threads-disable",
        False,
        ENV,
        "mpi4py initialises MPI without threads (lightcc only uses MPI at start-up)",
        "MPI4PY_RC_THREADS",
        "0",
    ),
    _flag(
        "--no-mpi-threads-disable",
        False,
        ENV,
        "mpi4py initialises MPI with threads (its default)",
        "MPI4PY_RC_THREADS",
        "1",
    ),
    _flag(
        "--binding-args",
        True,
        REFUSED,
        "binding is lightcc's own: set LIGHTCC_BIND=core, or pass mpirun binding options in --mpi-args",
    ),
    _flag(
        "--num-nccl-streams",
        True,
        NOTED,
        "fused batches in flight at once, each on its own stream, links and worker (1..8)",
        "LIGHT_NUM_STREAMS",
    ),
    _flag("--thread-affinity", True, ENV, "engine thread cores, one per local rank", "HOROVOD_THREAD_AFFINITY"),
    _flag("--ccl-bgt-affinity", True, REFUSED, "oneCCL is not used by lightcc"),
    _flag("--min-np --min-num-proc", True, ELASTIC, "elastic: fewest processes"),
    _flag("--max-np --max-num-proc", True, ELASTIC, "elastic: most processes"),
    _flag("--slots-per-host --slots", True, ELASTIC, "elastic: slots of a discovered host"),
    _flag("--host-discovery-script", True, ELASTIC, "elastic: the script that lists the hosts"),
    _flag("--elastic-timeout", True, ELASTIC, "elastic: how long to wait for enough hosts"),
    _flag("--reset-limit", True, ELASTIC, "elastic: most resets"),
    _flag("--blacklist-cooldown-range", True, ELASTIC, "elastic: cool-down of a failing host (LOW HIGH)", nargs=2),
)


_HOW = {
    SAME: "honoured (same flag)",
    ENV: "honoured (variable)",
    NOTED: "honoured (variable, note printed)",
    TRANSLATED: "honoured (translated)",
    IN_EFFECT: "already in effect (note printed)",
    REFUSED: "**refused** (exit 2)",
    ELASTIC: "honoured (lightccrun's elastic flag)",
}


def migration_table() -> str:
    """The markdown table of docs/migrating.md: every flag and what happens to it (a test keeps them equal)."""
    rows = ["| horovodrun flag | lightcc | how |", "|---|---|---|"]
    for flag in FLAGS:
        how = flag.note
        if flag.handling in (ENV, NOTED):
            exported = f"exports `{flag.env}`" + (f"={flag.value}" if flag.value else "")
            how = f"{exported}; {flag.note}" if flag.note else exported
        names = " / ".join(f"`{n}`" for n in flag.names)
        rows.append(f"| {names} | {_HOW[flag.handling]} | {how} |")
    return "\n".join(rows) + "\n"


class Refused(Exception):
    """A flag lightcc cannot honour; the message says which and why."""


def build_parser() -> argparse.ArgumentParser:
    """horovodrun's parser: every flag of :data:`FLAGS`, then the command."""
    parser = argparse.ArgumentParser(
        prog="horovodrun",
        description="Horovod's launcher flags, run by lightcc's lightccrun. Flags lightcc cannot "
        "honour are refused with a message; none is ignored.",
        epilog="Example: horovodrun -np 4 -H node1:2,node2:2 python train.py",
        allow_abbrev=False,
    )
    for flag in FLAGS:
        help_text = f"[{flag.handling}] {flag.note}".rstrip()
        if flag.takes_value:
            nargs = None if flag.nargs == 1 else flag.nargs
            parser.add_argument(*flag.names, dest=flag.dest, default=None, nargs=nargs, help=help_text)
        else:
            parser.add_argument(*flag.names, dest=flag.dest, action="store_true", default=None, help=help_text)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program to run and its arguments")
    return parser


def _lightccrun_options() -> set[str]:
    from lightcc.runner import launch

    return set(launch.build_parser()._option_string_actions)


def translate(
    args: argparse.Namespace, known: Callable[[], set[str]] = _lightccrun_options
) -> tuple[list[str], dict[str, str], list[str]]:
    """``(lightccrun argv, variables to export, notes)`` for parsed horovodrun arguments.

    Raises:
        Refused: a flag lightcc cannot honour was given.
    """
    argv: list[str] = []
    env: dict[str, str] = {}
    notes: list[str] = []
    options = None
    _refuse_contradicting_switches(args)
    for flag in FLAGS:
        value = getattr(args, flag.dest, None)
        if value is None:
            continue
        shown = flag.names[-1] if flag.names[-1].startswith("--") else flag.names[0]
        if flag.handling == REFUSED:
            raise Refused(f"{shown} is not supported: {flag.note}")
        if flag.handling == ELASTIC:
            options = options if options is not None else known()
            name = next((n for n in flag.names if n in options), None)
            if name is None:
                raise Refused(f"{shown} needs elastic training, which this lightcc's lightccrun does not have yet")
            argv += [name, *(value if isinstance(value, list) else [value])]
        elif flag.handling == SAME:
            argv += [_lightccrun_name(flag)] + ([value] if flag.takes_value else [])
        elif flag.handling in (ENV, NOTED):
            text = flag.value or str(value)
            if env.get(flag.env, text) != text:
                raise Refused(f"{shown}={text} contradicts another flag that sets {flag.env}={env[flag.env]}")
            env[flag.env] = text
            if flag.handling == NOTED:
                notes.append(f"{shown}: exports {flag.env}={text}; {flag.note}")
        elif flag.handling == IN_EFFECT:
            notes.append(f"{shown}: {flag.note}")
    _translate_special(args, argv, notes)
    return argv, env, notes


def _refuse_contradicting_switches(args: argparse.Namespace) -> None:
    given = {n for f in FLAGS if not f.takes_value and getattr(args, f.dest, None) for n in f.names}
    for name in sorted(given):
        if name.startswith("--no-") and "--" + name[len("--no-") :] in given:
            raise Refused(f"{name} and --{name[len('--no-') :]} contradict each other: give one")


def _lightccrun_name(flag: HorovodFlag) -> str:
    if flag.dest == "network_interfaces":
        return "--network-interfaces"
    if flag.dest == "stall_check_warning_time_seconds":
        return "--stall-check-warning-time-seconds"
    return flag.names[-1] if flag.names[-1].startswith("--") or len(flag.names) == 1 else flag.names[0]


def _translate_special(args: argparse.Namespace, argv: list[str], notes: list[str]) -> None:
    mpi_args: list[str] = []
    if args.ssh_identity_file:
        identity = shlex.quote(args.ssh_identity_file)
        if args.mpi:
            mpi_args += ["--mca", "plm_rsh_agent", f"ssh -i {identity}"]
        else:
            argv += ["--launch-template", f"ssh -o BatchMode=yes -i {identity} -p {{port}} {{host}}"]
    if args.tcp:
        if args.mpi:
            mpi_args += ["--mca", "pml", "ob1", "--mca", "btl", "^openib"]
        notes.append("--tcp: lightcc's traffic between hosts is TCP already")
    if mpi_args:
        given = argv.index("--mpi-args") if "--mpi-args" in argv else -1
        joined = shlex.join(mpi_args)
        if given >= 0:
            argv[given + 1] = f"{argv[given + 1]} {joined}"
        else:
            argv += ["--mpi-args", joined]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``horovodrun``; returns the exit code."""
    from lightcc.runner import launch
    from lightcc.version import __version__

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        print(f"lightcc {__version__} (horovodrun compatibility: lightccrun runs the job)")
        return 0
    try:
        run_argv, env, notes = translate(args)
    except Refused as err:
        print(f"horovodrun: error: {err}", file=sys.stderr)
        return 2
    for note in notes:
        print(f"horovodrun: note: {note}", file=sys.stderr)
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    os.environ.update(env)
    return launch.main(run_argv + (["--", *command] if command else []))


if __name__ == "__main__":
    sys.exit(main())
