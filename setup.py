"""Builds lightcc: the C++ core and the HARP plugin through CMake, the Python package around them."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
VERSION = {}
exec((ROOT / "lightcc" / "version.py").read_text(), VERSION)  # CMake stamps it into the core
PTH = "lightcc_horovod_alias.pth"


def cmake_dir_of_editable() -> Path:
    """Where an editable install builds, kept between installs (tests/single/test_cpp_units.py reuses it)."""
    return ROOT / "build" / f"cmake-{sys.implementation.cache_tag}"


def install_file(src: Path, dst: Path) -> None:
    """Copy to a new file and rename it over `dst`: a process that has the old one loaded keeps its inode
    (copying over a loaded shared library rewrites the pages it runs from)."""
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    shutil.copy2(src, tmp)
    os.replace(tmp, dst)


class CMakeExtension(Extension):
    """The whole CMake project, standing in for `lightcc._core`."""

    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    """Configures and builds with CMake; copies _core and the shared libraries into the package."""

    def run(self) -> None:
        # setuptools clears `inplace` while it builds (it copies the extension afterwards), but the
        # libraries and tools in lightcc/lib are ours to copy: remember it for build_extension.
        self._into_source = bool(self.inplace)
        super().run()

    def build_extension(self, ext: Extension) -> None:
        out = Path(self.get_ext_fullpath(ext.name)).resolve()
        pkg_dir = out.parent
        # An editable install keeps its build, so the C++ unit tests link the core it compiled
        # instead of compiling it again (about 160 s of CI on a 2-core machine).
        editable = getattr(self, "editable_mode", False)
        build_dir = cmake_dir_of_editable() if editable else Path(self.build_temp).resolve() / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        jobs = os.environ.get("LIGHTCC_BUILD_JOBS", str(max(1, min(os.cpu_count() or 1, 4))))
        configure = [
            "cmake", str(ROOT), f"-DPython_EXECUTABLE={sys.executable}", "-DCMAKE_BUILD_TYPE=Release",
            f"-DLIGHTCC_VERSION={VERSION['__version__']}",
            f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={build_dir / 'out'}",
        ]
        # Said either way: a kept build the C++ unit tests configured with tests ON keeps the option.
        configure.append(f"-DLIGHTCC_BUILD_TESTS={'ON' if os.environ.get('LIGHTCC_BUILD_TESTS') == '1' else 'OFF'}")
        # Extra CMake arguments (the scikit-build convention); packaging/build_wheel.sh passes its own.
        configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        subprocess.check_call(configure, cwd=build_dir)
        subprocess.check_call(["cmake", "--build", ".", "--parallel", jobs], cwd=build_dir)
        built = build_dir / "out"
        cores = list(built.glob("_core*.so"))
        if not cores:
            raise RuntimeError(f"CMake did not produce lightcc._core in {built}")
        pkg_dir.mkdir(parents=True, exist_ok=True)
        install_file(cores[0], out)
        # Shared libraries (HARP plugin, CUDA kernels) and HARP's tools and test binaries ship in
        # lightcc/lib, where lightcc.harp and the engine look for them.
        lib_dir = pkg_dir / "lib"
        lib_dir.mkdir(exist_ok=True)
        for path in build_dir.rglob("*"):
            if "CMakeFiles" in path.parts or not path.is_file():
                continue
            shipped = (path.name.startswith("lib") and path.suffix == ".so") or (
                path.name.startswith("harp") and os.access(path, os.X_OK) and path.suffix == "")
            if shipped and path.name != "liblightcc_core.a":
                install_file(path, lib_dir / path.name)
                if editable or getattr(self, "_into_source", False):
                    # An editable install imports lightcc from the source tree: ship there too.
                    src_lib = ROOT / "lightcc" / "lib"
                    src_lib.mkdir(exist_ok=True)
                    install_file(path, src_lib / path.name)


class BuildPyWithAlias(build_py):
    """Also ships packaging/lightcc_horovod_alias.pth to site-packages' root (LIGHTCC_AS_HOROVOD, docs/torch.md)."""

    def run(self) -> None:
        super().run()
        shutil.copy2(ROOT / "packaging" / PTH, Path(self.build_lib) / PTH)


# Metadata, dependencies and entry points are in pyproject.toml ([project]); this file is the build.
setup(
    ext_modules=[CMakeExtension("lightcc._core")],
    cmdclass={"build_ext": CMakeBuild, "build_py": BuildPyWithAlias},
)
