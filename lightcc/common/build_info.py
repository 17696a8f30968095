"""What this install was built with and can load: CUDA kernels, NCCL, the HARP plugin."""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Dict

_LIB = Path(__file__).resolve().parent.parent / "lib"


def harp_plugin_path() -> str:
    """Path of the bundled HARP NCCL net plugin ('' if it was not built)."""
    p = _LIB / "libnccl-net-harp.so"
    return str(p) if p.exists() else ""


def cuda_built() -> bool:
    """Whether the CUDA kernel library was compiled (needs nvcc at build time)."""
    return (_LIB / "liblightcc_cuda.so").exists()


def cuda_devices() -> tuple[int, str]:
    """``(number of GPUs the CUDA driver sees, why none when 0)``; never raises.

    Asks the driver (libcuda.so.1: cuInit, cuDeviceGetCount) directly, so it needs no CUDA
    runtime and no framework; built kernels are no use without it.
    """
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as err:
        return 0, f"no CUDA driver ({err})"
    status = lib.cuInit(0)
    if status != 0:
        return 0, f"cuInit failed (CUresult {status}: no GPU, or the driver cannot reach it)"
    count = ctypes.c_int(0)
    status = lib.cuDeviceGetCount(ctypes.byref(count))
    if status != 0:
        return 0, f"cuDeviceGetCount failed (CUresult {status})"
    return int(count.value), "" if count.value else "the driver sees no GPU"


def nccl_library() -> str:
    """The libnccl.so.2 the engine loads first: LIGHTCC_NCCL_LIBRARY, else the nvidia-nccl wheel's
    (the one CUDA builds of torch load), else '' (the dynamic loader's choice)."""
    import importlib.util
    import os

    chosen = os.environ.get("LIGHTCC_NCCL_LIBRARY", "")
    if chosen:
        return chosen
    try:
        spec = importlib.util.find_spec("nvidia.nccl")
    except (ImportError, ValueError):
        spec = None
    for base in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(base) / "lib" / "libnccl.so.2"
        if candidate.exists():
            return str(candidate)
    return ""


def nccl_version() -> int:
    """NCCL's version code if libnccl can be loaded on this machine, else 0."""
    for name in [n for n in (nccl_library(), "libnccl.so.2", "libnccl.so") if n]:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int(0)
        if lib.ncclGetVersion(ctypes.byref(version)) == 0:
            return int(version.value)
    return 0


def summary() -> Dict[str, object]:
    """Everything `lightccrun --check-build` prints."""
    from lightcc.common.native import core

    info: Dict[str, object] = dict(core().build_info())
    devices, why = cuda_devices()
    info.update({
        "cuda_devices": devices,
        "cuda_devices_note": why,
        "cuda_compiled": cuda_built(),
        "harp_plugin_path": harp_plugin_path(),
    })
    try:
        info.update(core().device_info(nccl_library()))
    except AttributeError:  # a core built before device_info existed
        info.update({"nccl_version": nccl_version(), "nccl_library": nccl_library(), "cuda_error": ""})
    info["nccl_found"] = int(info.get("nccl_version") or 0) != 0
    return info
