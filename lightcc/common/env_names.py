"""The environment variables lightcc knows beyond the core's flag table, and the warning for the rest.

What lightcc knows is the core's flag table (``csrc/common/config.cc``, ``core().flags()``: every
variable the engine reads) plus the tables here: what lightcc's Python side reads (with the file that
reads it), what its build, tools and tests read, what the launchers set only for the user's script,
and Horovod's variables that lightcc deliberately ignores (with why). At ``init`` rank 0 warns once, naming every ``HOROVOD_*``,
``LIGHT_*`` or ``LIGHTCC_*`` variable in its environment that is in none of them: a typo or a
variable of a Horovod feature lightcc lacks would otherwise change nothing without a word.

Rank 0 alone warns: every launcher (lightccrun, horovodrun, mpirun ``-x``) gives all ranks the
launcher's environment, so one line says it all; one per rank would bury it at scale.

``tests/single/test_flags_readers.py`` holds these tables to the code: each ``PYTHON_READS`` and
``TOOL_READS`` name must appear in the file named for it, every literal variable name in ``lightcc/`` must be known, and
every variable a launcher exports or a doc lists must be read by someone.
"""

from __future__ import annotations

import os
import warnings
from typing import Iterable, Mapping

PREFIXES = ("HOROVOD_", "LIGHT_", "LIGHTCC_")

_RANK_NAMES = ("RANK", "SIZE", "LOCAL_RANK", "LOCAL_SIZE", "CROSS_RANK", "CROSS_SIZE", "HOSTNAME")

# Read by lightcc's Python side (or its build), each with the file that reads it (from the repo root).
PYTHON_READS: dict[str, str] = {
    **{f"{p}_{n}": "lightcc/common/launch_env.py" for p in ("LIGHTCC", "HOROVOD") for n in _RANK_NAMES},
    "LIGHTCC_RENDEZVOUS_ADDR": "lightcc/common/launch_info.py",
    "LIGHTCC_JOB_SECRET": "lightcc/common/launch_info.py",
    "LIGHTCC_RENDEZVOUS_FILE": "lightcc/common/launch_info.py",
    "HOROVOD_GLOO_IFACE": "lightcc/common/launch_info.py",
    "LIGHTCC_ELASTIC_ADDR": "lightcc/common/elastic_channel.py",
    "LIGHTCC_ELASTIC_WORKER": "lightcc/common/elastic_channel.py",
    "LIGHTCC_ELASTIC_SLOT": "lightcc/runner/worker_relay.py",
    "LIGHTCC_AS_HOROVOD": "lightcc/horovod_alias.py",
    "LIGHTCC_BENCH_GLOO_ADDR": "lightcc/bench/spec.py",
    "LIGHTCC_P2P_ANY_SOURCE": "lightcc/torch/c10d/any_source.py",
}

# Read by lightcc's build, its tools and its tests, not by a training process (CMake cache entries too).
TOOL_READS: dict[str, str] = {
    "LIGHTCC_BUILD_JOBS": "setup.py",
    "LIGHTCC_BUILD_TESTS": "setup.py",
    "LIGHTCC_GPU_MPS": "tests/gpu/run.sh",
    "LIGHTCC_FAKE_HOST": "tests/parallel/test_lightccrun.py",
    "LIGHTCC_BENCH_TEST_MARKER": "tests/parallel/test_bench_cli.py",
    "LIGHTCC_BENCH_DRIVERS_JOB": "benchmarks/elastic/driver_loss.py",
    "HARP_BUILD_DIR": "harp_plugin/tests/test_harp.py",
    "HARP_INSTALL_DIR": "harp_plugin/CMakeLists.txt",
    "HARP_TEST_VERBOSE": "harp_plugin/tools/plugin_loader.cc",
}

# Set by lightcc's launchers for the user's script; nothing in lightcc reads them.
FOR_SCRIPTS: dict[str, str] = {
    "HOROVOD_ELASTIC": "1 in workers of an elastic job (lightccrun --min-np/--max-np), as Horovod sets it",
    "LIGHTCC_RESTART": "the attempt number under lightccrun --max-restarts (0 for the first)",
}

# Horovod's variables that lightcc knows and deliberately ignores: setting one changes nothing.
IGNORED: dict[str, str] = {
    "HOROVOD_HIERARCHICAL_ALLGATHER": "no separate switch: the 2D allgather follows LIGHT_2D_ALLREDUCE "
    "(HOROVOD_HIERARCHICAL_ALLREDUCE), auto by the cost model",
    "HOROVOD_NUM_NCCL_STREAMS": "set LIGHT_NUM_STREAMS (horovodrun --num-nccl-streams does)",
    "HOROVOD_GLOO_TIMEOUT_SECONDS": "lightcc has one timeout, LIGHTCC_TIMEOUT",
    "HOROVOD_START_TIMEOUT": "lightcc has one timeout, LIGHTCC_TIMEOUT",
    "HOROVOD_ELASTIC_TIMEOUT": "give lightccrun --elastic-timeout",
    "HOROVOD_CONTROLLER": "lightcc negotiates through its own coordinator (no MPI or Gloo controller to choose)",
    "HOROVOD_CPU_OPERATIONS": "lightcc runs its own CPU collectives (no MPI, Gloo or oneCCL to choose)",
    "HOROVOD_MPI_THREADS_DISABLE": "lightcc uses MPI only at start-up, through mpi4py (MPI4PY_RC_THREADS)",
    "HOROVOD_LOG_HIDE_TIME": "lightcc's log lines always carry the time",
    "HOROVOD_GLOO_RENDEZVOUS_ADDR": "horovodrun's own rendezvous; lightcc uses LIGHTCC_RENDEZVOUS_ADDR",
    "HOROVOD_GLOO_RENDEZVOUS_PORT": "horovodrun's own rendezvous; lightcc uses LIGHTCC_RENDEZVOUS_ADDR",
    "HOROVOD_SECRET_KEY": "horovodrun's own secret; lightcc uses LIGHTCC_JOB_SECRET",
    "HOROVOD_ADASUM_MPI_CHUNK_SIZE": "lightcc's Adasum does not run over MPI",
    "HOROVOD_BATCH_D2D_MEMCOPIES": "no such switch: the device executor packs fusion buffers its own way",
    "HOROVOD_CCL_CACHE": "oneCCL is not used",
    "HOROVOD_DISABLE_GROUP_FUSION": "no such switch: grouped ops fuse as LIGHT_FUSION_STRATEGY says",
    "HOROVOD_DISABLE_NVTX_RANGES": "lightcc emits no NVTX ranges",
    "HOROVOD_ENABLE_ASYNC_COMPLETION": "no such switch: GPU work is ordered and completed through CUDA events",
    "HOROVOD_ENABLE_XLA_OPS": "lightcc has no XLA ops",
}

# Horovod's build-time variables (HOROVOD_WITH_PYTORCH, HOROVOD_GPU_OPERATIONS, HOROVOD_NCCL_HOME, ...):
# read by `pip install horovod` only; lightcc's build compiles nothing against a framework.
IGNORED_PREFIXES: dict[str, str] = {
    prefix: "Horovod's build-time variables"
    for prefix in (
        "HOROVOD_WITH_",
        "HOROVOD_WITHOUT_",
        "HOROVOD_GPU_",
        "HOROVOD_NCCL_",
        "HOROVOD_CUDA_",
        "HOROVOD_ROCM_",
        "HOROVOD_BUILD_",
        "HOROVOD_CMAKE",
        "HOROVOD_MPI_HOME",
        "HOROVOD_DEBUG",
    )
}

_warned = False


def known(core_flags: Iterable[str]) -> set[str]:
    """Every variable name lightcc knows: the core's flag table plus the tables above."""
    return set(core_flags) | set(PYTHON_READS) | set(TOOL_READS) | set(FOR_SCRIPTS) | set(IGNORED)


def unread(environ: Mapping[str, str], core_flags: Iterable[str]) -> list[str]:
    """The ``HOROVOD_*``/``LIGHT_*``/``LIGHTCC_*`` names in ``environ`` that nothing in lightcc knows, sorted."""
    names = known(core_flags)
    return sorted(
        k for k in environ if k.startswith(PREFIXES) and k not in names and not k.startswith(tuple(IGNORED_PREFIXES))
    )


def warn_unread(rank: int, core_flags: Iterable[str], environ: Mapping[str, str] | None = None) -> None:
    """On rank 0, once per process: one warning naming every variable :func:`unread` finds."""
    global _warned
    if _warned or rank != 0:
        return
    _warned = True
    names = unread(os.environ if environ is None else environ, core_flags)
    if names:
        warnings.warn(
            f"lightcc: rank 0: nothing in lightcc reads {', '.join(names)} (misspelled, or a Horovod feature "
            "lightcc lacks?); docs/flags.md lists the variables it reads and the Horovod ones it ignores",
            stacklevel=3,
        )
