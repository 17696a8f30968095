"""Small helpers scripts import from Horovod's `common.util`: env, split_list, version and extension checks."""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import warnings
from typing import Any, Callable, Dict, Iterator, List, Sequence, Tuple, TypeVar

T = TypeVar("T")

# Horovod's extension names and the lightcc front (plus framework module) each one maps to.
_EXTENSIONS: Dict[str, Tuple[str, str]] = {
    "horovod.torch": ("lightcc.torch", "torch"),
    "horovod.tensorflow": ("lightcc.tensorflow", "tensorflow"),
    "horovod.keras": ("lightcc.keras", "tensorflow"),
    "horovod.mxnet": ("lightcc.mxnet", "mxnet"),
}


def _cache(f: Callable[..., T]) -> Callable[..., T]:
    """Memoise a function of hashable arguments (Horovod's `_cache`)."""
    return functools.lru_cache(maxsize=None)(f)


def _front_of(ext_base_name: str) -> Tuple[str, str]:
    name = ext_base_name.replace(".mpi_lib_v2", "").replace(".mpi_lib", "")
    if name in _EXTENSIONS:
        return _EXTENSIONS[name]
    if name.startswith("lightcc."):
        return name, name.split(".")[1]
    raise ValueError(f"unknown extension {ext_base_name!r}; known: {', '.join(_EXTENSIONS)}")


@_cache
def extension_available(ext_base_name: str, verbose: bool = False) -> bool:
    """Whether a framework front can be used here: its lightcc package, framework and the core exist."""
    front, framework = _front_of(ext_base_name)
    ok = all(importlib.util.find_spec(m) is not None for m in (framework, "lightcc._core")) and \
        importlib.util.find_spec(front) is not None
    if verbose:
        print(f"Extension {ext_base_name} ({front}) is {'' if ok else 'NOT '}available.")
    return ok


def check_extension(ext_name: str, ext_env_var: str, pkg_path: str, *args: Any) -> None:
    """ImportError naming what is missing when a front cannot be used."""
    if not extension_available(ext_name):
        front, framework = _front_of(ext_name)
        raise ImportError(f"{ext_name} ({front}) is not available: install {framework} and lightcc's compiled core "
                          f"(`pip install .` builds it); {ext_env_var} plays no part in lightcc's build")


def get_version_mismatch_message(name: str, version: str, installed_version: str) -> str:
    """Horovod's message for a framework whose version changed since the build."""
    return (f"Framework {name} installed with version {installed_version} but found version {version}. "
            "This can result in unexpected behavior including runtime errors.")


class HorovodVersionMismatchError(ImportError):
    """Horovod raises it when a framework's version differs from the one it was compiled against.

    lightcc compiles against no framework, so it never raises it; scripts that catch it still work.
    """

    def __init__(self, name: str, version: str, installed_version: str) -> None:
        super().__init__(get_version_mismatch_message(name, version, installed_version))
        self.name = name
        self.version = version
        self.installed_version = installed_version


def check_installed_version(name: str, version: str) -> None:
    """Horovod's build-time version check; a no-op here (no framework is compiled in)."""


def is_iterable(x: Any) -> bool:
    """Whether iter(x) works."""
    try:
        iter(x)
    except TypeError:
        return False
    return True


def get_average_backwards_compatibility_fun(reduce_ops: Any) -> Callable[[Any, Any], Any]:
    """Horovod's helper for the deprecated `average` flag: returns f(op, average) -> op."""

    def handle(op: Any, average: Any) -> Any:
        if op is not None:
            if average is not None:
                raise ValueError("The op parameter supersedes average. Please provide only one of them.")
            return op
        if average is not None:
            warnings.warn("Parameter `average` has been replaced with `op` and will be removed",
                          DeprecationWarning)
            return reduce_ops.Average if average else reduce_ops.Sum
        return reduce_ops.Average

    return handle


def gpu_available(ext_base_name: str, verbose: bool = False) -> bool:
    """Whether the framework behind a Horovod extension name sees a GPU."""
    _, framework = _front_of(ext_base_name)
    available = False
    if framework == "torch" and importlib.util.find_spec("torch") is not None:
        import torch

        available = bool(torch.cuda.is_available())
    elif framework == "tensorflow" and importlib.util.find_spec("tensorflow") is not None:
        import tensorflow as tf

        available = bool(tf.config.list_physical_devices("GPU"))
    if verbose:
        print(f"Extension {ext_base_name} {'has' if available else 'has no'} GPU available.")
    return available


def nccl_built(verbose: bool = False) -> int:
    """NCCL version code lightcc can load here, or 0."""
    from lightcc.common import build_info

    return build_info.nccl_version()


def ddl_built(verbose: bool = False) -> bool:
    """False: no IBM DDL."""
    return False


def ccl_built(verbose: bool = False) -> bool:
    """False: no oneCCL."""
    return False


def gloo_built(verbose: bool = False) -> bool:
    """False: lightcc does not use gloo for its collectives."""
    return False


def mpi_built(verbose: bool = False) -> bool:
    """False: lightcc is not built against MPI (mpirun only launches it)."""
    return False


def split_list(items: Sequence[T], n: int) -> List[Sequence[T]]:
    """Cut `items` into `n` contiguous parts whose lengths differ by at most one (longer ones first)."""
    if n <= 0:
        raise ValueError(f"split_list needs a positive number of parts, got {n}")
    base, extra = divmod(len(items), n)
    parts, start = [], 0
    for i in range(n):
        end = start + base + (1 if i < extra else 0)
        parts.append(items[start:end])
        start = end
    return parts


_VERSION = re.compile(r"^\d+\.\d+\.\d+")


def is_version_greater_equal_than(ver: str, target: str) -> bool:
    """Whether version string `ver` >= `target`; both must look like x.y.z (ValueError otherwise)."""
    if not isinstance(ver, str) or not isinstance(target, str):
        raise ValueError("is_version_greater_equal_than accepts only string arguments")
    for v in (ver, target):
        if len(v.split(".")) != 3 or not _VERSION.match(v):
            raise ValueError(f"version strings must look like x.y.z, got {v!r}")
    try:
        from packaging import version
    except ImportError:  # pragma: no cover - packaging ships with pip
        return tuple(int(x) for x in _VERSION.match(ver).group(0).split(".")) >= \
            tuple(int(x) for x in _VERSION.match(target).group(0).split("."))
    return version.parse(ver) >= version.parse(target)


def num_rank_is_power_2(num_rank: int) -> bool:
    """Whether a rank count is a power of two."""
    return num_rank > 0 and (num_rank & (num_rank - 1)) == 0


@contextlib.contextmanager
def env(**kwargs: Any) -> Iterator[None]:
    """Set environment variables for the block (None unsets one) and restore them afterwards."""
    saved = {k: os.environ.get(k) for k in kwargs}
    try:
        for k, v in kwargs.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
