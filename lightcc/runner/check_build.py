"""``lightccrun --check-build``: what this lightcc installation can do, in horovodrun's layout.

Reads the native core's ``lightcc._core.build_info()`` (keys ``version``, ``simd``,
``cuda_compiled``, ``harp_plugin_path``, ``nccl_found``, and from ``build_info.summary()``
``cuda_devices``/``cuda_devices_note``, and from the core's ``device_info`` ``cuda_error``,
``cuda_architectures``, ``cuda_compiler_version``) and looks for frameworks without importing them. CUDA is two
lines: the kernels the engine loads (from a source build with nvcc or the lightcc-cudaNN wheel) with the GPU
architectures they carry, and a GPU the driver can actually use ("no CUDA device" and why, when there is none).
Works, and says so, when the core is not built.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import shutil
from typing import Any


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _has_front(name: str) -> bool:
    """A lightcc front is present when its package has real code (not an empty directory)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin not in (None, "namespace")


def core_build_info() -> tuple[dict[str, Any] | None, str]:
    """``(build_info, "")`` from the native core, or ``(None, why it is unavailable)``.

    Prefers ``lightcc.common.build_info.summary()`` (the core's facts plus what can be loaded on
    this machine), falling back to ``lightcc._core.build_info()``.
    """
    try:
        try:
            facts = importlib.import_module("lightcc.common.build_info")
        except ImportError:
            return dict(importlib.import_module("lightcc._core").build_info()), ""
        return dict(facts.summary()), ""
    except Exception as err:  # noqa: BLE001 - any failure to load means "not built" here
        return None, f"{type(err).__name__}: {err}"


def _version(info: dict[str, Any] | None) -> str:
    if info and info.get("version"):
        return str(info["version"])
    try:
        return importlib.metadata.version("lightcc")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown: not installed)"


def _line(available: bool, label: str) -> str:
    return f"    [{'X' if available else ' '}] {label}"


def report() -> str:
    """The ``--check-build`` text."""
    info, why = core_build_info()
    lines: list[str] = [f"lightcc v{_version(info)}:", ""]
    if info is None:
        lines += [
            f"The native core is not built (lightcc._core: {why}).",
            "Collectives are unavailable until it is; install lightcc with pip to build it.",
            "",
        ]
    lines.append("Available Frameworks:")
    lines.append(_line(_has_module("tensorflow") and _has_front("lightcc.tensorflow"), "TensorFlow"))
    lines.append(_line(_has_module("torch") and _has_front("lightcc.torch"), "PyTorch"))
    lines.append(_line(_has_module("keras") and _has_front("lightcc.keras"), "Keras"))
    lines += ["", "Available Launchers:"]
    lines.append(_line(True, "lightccrun (TCP rendezvous)"))
    lines.append(_line(shutil.which("mpirun") is not None, "MPI (mpirun)"))
    lines.append(_line(_has_module("mpi4py"), "mpi4py (rendezvous under a plain mpirun)"))
    lines += ["", "Available Tensor Operations:"]
    info = info or {}
    harp = str(info.get("harp_plugin_path") or "")
    # Both are loaded here exactly as the engine loads them for the first GPU tensor.
    nccl_version = int(info.get("nccl_version") or 0)
    nccl = (f"NCCL {nccl_version // 10000}.{nccl_version // 100 % 100}.{nccl_version % 100} "
            f"({info.get('nccl_library')})" if nccl_version else f"NCCL ({str(info.get('nccl_error') or 'not found').replace(chr(10), ' ')})")
    lines.append(_line(nccl_version > 0, nccl))
    lines += _cuda_lines(info)
    chosen = os.environ.get("NCCL_NET_PLUGIN") or os.environ.get("LIGHTCC_NET_PLUGIN")
    if chosen:
        lines.append(_line(True, f"NCCL net plugin: {chosen} (your choice; lightcc leaves it)"))
    else:
        lines.append(_line(bool(harp) and os.path.exists(harp),
                           f"HARP net plugin ({harp}; NCCL loads it for lightcc's communicators)" if harp
                           else "HARP net plugin"))
    simd = info.get("simd")
    lines.append(_line(bool(info), f"CPU ({simd})" if simd else "CPU"))
    lines += ["", *_fd_budget()]
    return "\n".join(lines)


def cuda_architectures(spec: str) -> str:
    """CMake's CUDA_ARCHITECTURES as GPUs: ``"75-real 90-real 90-virtual"`` -> ``"sm_75 sm_90, PTX compute_90"``.

    ``-real`` is machine code for that GPU, ``-virtual`` PTX that the driver compiles for newer ones,
    a bare number both; anything else (``all``, ``native``) is shown as given.
    """
    machine: list[str] = []
    ptx: list[str] = []
    for entry in spec.replace(";", " ").split():
        arch, _, kind = entry.partition("-")
        if not arch.isdigit():
            return spec
        if kind in ("", "real"):
            machine.append(f"sm_{arch}")
        if kind in ("", "virtual"):
            ptx.append(f"compute_{arch}")
    return ", ".join(part for part in (" ".join(machine), f"PTX {' '.join(ptx)}" if ptx else "") if part)


def _cuda_lines(info: dict[str, Any]) -> list[str]:
    """The CUDA kernels line and the CUDA GPU line: built (and for which GPUs) is one fact, a usable GPU another."""
    built = bool(info.get("cuda_compiled"))
    kernels_error = str(info.get("cuda_error") or "")
    loaded = built and not kernels_error
    if loaded:
        archs = cuda_architectures(str(info.get("cuda_architectures") or ""))
        cuda = str(info.get("cuda_compiler_version") or "")
        kernels = (f"CUDA kernels (liblightcc_cuda.so{', CUDA ' + cuda if cuda else ''}: {archs or 'architectures unknown'}; "
                   "fusion, scaling, casts, top-k; loaded by the engine)")
    elif built:
        kernels = f"CUDA kernels ({kernels_error})"
    else:
        kernels = "CUDA kernels (not built: no nvcc at build time, and no lightcc-cuda13 wheel installed)"
    devices = int(info.get("cuda_devices") or 0)
    note = str(info.get("cuda_devices_note") or "")
    gpu = f"CUDA GPU ({devices} visible)" if devices else f"CUDA GPU (no CUDA device: {note})" if note else \
        "CUDA GPU (no CUDA device)"
    return [_line(loaded, kernels), _line(devices > 0, gpu)]


def _fd_budget() -> list[str]:
    """The file descriptors a rank needs, against this shell's limit (docs/scale.md, Control plane)."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = "unlimited" if soft == resource.RLIM_INFINITY else str(soft)
    return [
        f"File descriptors per rank (ulimit -n here: {limit}; a net link holds 2 * HARP_NFLOWS, 16 by default):",
        "    at init about 8 + C * (1 + 16 * E): C channels, E links to other hosts per channel",
        "    (2 ring neighbours, 2 in the 2D cross ring, about log2(hosts) more in the negotiation tree)",
        "    each other peer on another host adds 16 when first used; all of them: 8 + 16 * (p - ranks per host)",
    ]
