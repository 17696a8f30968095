"""The one table of lightccrun's tuning flags and the environment variables each one sets.

Horovod-compatible flags map onto Horovod's variable names, which lightcc's engine reads (the
launcher exports a variable only when its flag is given). ``add_flags`` builds the argparse options
from the table and ``env_from_args`` turns parsed arguments back into variables, so a flag and its
variable are written down exactly once. A flag lightcc cannot honour (``--hierarchical-allgather``)
still parses, and ``env_from_args`` refuses it with the reason instead of exporting a variable that
nothing reads (tests/single/test_flags_readers.py checks every exported variable has a reader).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable, Sequence

LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL")
BYTES_PER_MB = 1024 * 1024


# Horovod switches its hierarchical allgather apart from the allreduce; lightcc's 2D allgather follows
# the 2D allreduce's switch, so accepting a separate one would be a lie.
HIERARCHICAL_ALLGATHER_REFUSED = (
    "lightcc has no separate hierarchical allgather switch: its 2D allgather is taken where the cost model "
    "says it pays, and --hierarchical-allreduce / --no-hierarchical-allreduce (LIGHT_2D_ALLREDUCE=1/0) force "
    "the 2D allreduce and allgather on or off together; drop the flag"
)


def _flag_bit(value: Any) -> dict[str, str]:
    return {"": "1" if value else "0"}


@dataclass(frozen=True)
class EnvFlag:
    """One command-line flag and the variables it exports.

    ``to_env`` maps the parsed value to ``{suffix_or_name: value}``: the key ``""`` stands for
    ``env`` itself, any other key is a full variable name (for flags that set several).
    """

    flags: tuple[str, ...]
    env: str
    help: str
    type: Callable[[str], Any] | None = None
    action: str | None = None
    to_env: Callable[[Any], dict[str, str]] = lambda v: {"": str(v)}
    choices: Sequence[str] | None = None
    minimum: float | None = None
    refused: str = ""  # why lightcc cannot honour the flag; given, it fails with this reason

    @property
    def dest(self) -> str:
        return self.flags[-1].lstrip("-").replace("-", "_")


def _interfaces(value: str) -> dict[str, str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise ValueError(f"--network-interfaces {value!r} names no interface")
    # HARP matches prefixes unless a name starts with '=' (docs/harp.md): these are exact names.
    return {
        "HOROVOD_GLOO_IFACE": names[0],
        "NCCL_SOCKET_IFNAME": ",".join(names),
        "HARP_IFNAME": ",".join("=" + n for n in names),
    }


FLAGS: tuple[EnvFlag, ...] = (
    EnvFlag(
        ("--fusion-threshold-mb",),
        "HOROVOD_FUSION_THRESHOLD",
        "fusion buffer size in MB (exported in bytes; 0 disables fusion; default 128)",
        type=int,
        minimum=0,
        to_env=lambda v: {"": str(v * BYTES_PER_MB)},
    ),
    EnvFlag(
        ("--cycle-time-ms",),
        "HOROVOD_CYCLE_TIME",
        "delay before the next negotiation cycle while work keeps arriving (default 0: negotiate as "
        "soon as work arrives; Horovod's default is 1 ms)",
        type=float,
        minimum=0,
        to_env=lambda v: {"": f"{v:g}"},
    ),
    EnvFlag(
        ("--cache-capacity",),
        "HOROVOD_CACHE_CAPACITY",
        "response cache entries (0 disables the cache; default 1024)",
        type=int,
        minimum=0,
    ),
    EnvFlag(
        ("--hierarchical-allreduce",),
        "HOROVOD_HIERARCHICAL_ALLREDUCE",
        "reduce within each host first, then across hosts",
        action="store_true",
        to_env=_flag_bit,
    ),
    EnvFlag(
        ("--hierarchical-allgather",),
        "",
        "refused",
        action="store_true",
        refused=HIERARCHICAL_ALLGATHER_REFUSED,
    ),
    EnvFlag(
        ("--autotune",),
        "HOROVOD_AUTOTUNE",
        "search fusion threshold, cycle time, fusion strategy, streams, 2D and the top-k threshold online, "
        "then freeze the best (docs: Tuning)",
        action="store_true",
        to_env=_flag_bit,
    ),
    EnvFlag(
        ("--autotune-log-file",),
        "HOROVOD_AUTOTUNE_LOG",
        "with --autotune: rank 0 writes one CSV row per sample here (lightcc-bench autotune-plot draws it)",
    ),
    EnvFlag(
        ("--autotune-warmup-samples",),
        "HOROVOD_AUTOTUNE_WARMUP_SAMPLES",
        "samples discarded before the search starts (default 3)",
        type=int,
        minimum=0,
    ),
    EnvFlag(
        ("--autotune-steps-per-sample",),
        "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE",
        "steps scored per candidate setting (default 10)",
        type=int,
        minimum=1,
    ),
    EnvFlag(
        ("--autotune-bayes-opt-max-samples",),
        "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES",
        "samples of the Bayesian stage (default 20)",
        type=int,
        minimum=1,
    ),
    EnvFlag(
        ("--autotune-gaussian-process-noise",),
        "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE",
        "noise of the Gaussian process over normalised scores (default 0.8)",
        type=float,
        minimum=1e-6,
        to_env=lambda v: {"": f"{v:g}"},
    ),
    EnvFlag(
        ("--timeline-filename",), "HOROVOD_TIMELINE", "write a Chrome-trace timeline of every collective to this file"
    ),
    EnvFlag(
        ("--timeline-mark-cycles",),
        "HOROVOD_TIMELINE_MARK_CYCLES",
        "mark each background cycle in the timeline",
        action="store_true",
        to_env=_flag_bit,
    ),
    EnvFlag(
        ("--no-stall-check",),
        "HOROVOD_STALL_CHECK_DISABLE",
        "do not warn about ranks that fall behind",
        action="store_true",
        to_env=_flag_bit,
    ),
    EnvFlag(
        ("--stall-check-warning-time-seconds", "--stall-check-time-seconds"),
        "HOROVOD_STALL_CHECK_TIME_SECONDS",
        "seconds before warning that some ranks have not submitted a tensor (default 60)",
        type=int,
        minimum=0,
    ),
    EnvFlag(
        ("--stall-check-shutdown-time-seconds",),
        "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS",
        "seconds of stall after which the job shuts down (default 0 = never)",
        type=int,
        minimum=0,
    ),
    EnvFlag(
        ("--log-level",),
        "HOROVOD_LOG_LEVEL",
        "lightcc's log level (default WARNING)",
        type=str.upper,
        choices=LOG_LEVELS,
    ),
    EnvFlag(
        ("--network-interfaces",),
        "HOROVOD_GLOO_IFACE",
        "comma-separated network interfaces for traffic between hosts (e.g. eth0,eth1): HARP's "
        "(HARP_IFNAME), NCCL's and Gloo's, and the rendezvous address",
        to_env=_interfaces,
    ),
    EnvFlag(
        ("--as-horovod",),
        "LIGHTCC_AS_HOROVOD",
        "let `import horovod.*` in the training script load lightcc",
        action="store_true",
        to_env=_flag_bit,
    ),
)


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Adds every flag of :data:`FLAGS` to ``parser`` (in a "tuning" group)."""
    group = parser.add_argument_group("tuning (exported as environment variables)")
    for flag in FLAGS:
        shown = f"refused: {flag.refused}" if flag.refused else f"{flag.help} [{flag.env}]"
        kwargs: dict[str, Any] = {"dest": flag.dest, "help": shown}
        if flag.action:
            kwargs["action"] = flag.action
            kwargs["default"] = None
        else:
            kwargs["type"] = flag.type or str
            if flag.choices:
                kwargs["choices"] = flag.choices
        group.add_argument(*flag.flags, **kwargs)


def env_from_args(args: argparse.Namespace) -> dict[str, str]:
    """The variables the given flags export; flags left unset export nothing.

    Raises:
        ValueError: a value is out of range, or a refused flag was given; the message names the flag.
    """
    env: dict[str, str] = {}
    for flag in FLAGS:
        value = getattr(args, flag.dest, None)
        if value is None or value is False:
            continue
        if flag.refused:
            raise ValueError(f"{flag.flags[0]} is not supported: {flag.refused}")
        if flag.minimum is not None and value < flag.minimum:
            raise ValueError(f"{flag.flags[0]}={value} must be >= {flag.minimum:g}")
        for key, text in flag.to_env(value).items():
            env[key or flag.env] = text
    return env
