"""The benchmarked libraries by name: make_backend picks the adapter (backend_*.py) for one.

Apart from the interface (backend.py), which every adapter imports; the adapters are imported here
only when chosen, so a run never imports torch or mpi4py for a library it does not measure.
"""

from __future__ import annotations

from lightcc.bench.backend import Backend


def make_backend(name: str) -> Backend:
    """Create the backend for library ``name`` (lightcc, gloo, torch-lightcc or mpi) without initialising it."""
    if name == "lightcc":
        from lightcc.bench.backend_lightcc import LightccBackend

        return LightccBackend()
    if name == "gloo":
        from lightcc.bench.backend_gloo import GlooBackend

        return GlooBackend()
    if name == "torch-lightcc":
        from lightcc.bench.backend_gloo import GlooBackend

        return GlooBackend(torch_backend="lightcc", name="torch-lightcc")
    if name == "mpi":
        from lightcc.bench.backend_mpi import MpiBackend

        return MpiBackend()
    raise ValueError(f"unknown library {name!r}")
