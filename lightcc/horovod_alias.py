"""Lets `import horovod...` load lightcc when LIGHTCC_AS_HOROVOD asks for it (imported from a .pth at startup).

lightcc_horovod_alias.pth (packaging/; pip puts it at the root of site-packages) runs
`import lightcc.horovod_alias` when Python starts: a .pth is the only hook that runs before a
user's script, and an unmodified Horovod script's `import horovod` comes first thing. Without
LIGHTCC_AS_HOROVOD nothing else happens (``import lightcc`` loads neither the core nor a
framework, so startup stays cheap). With LIGHTCC_AS_HOROVOD=1 (what `lightccrun --as-horovod`
exports) a meta-path finder maps `horovod` to `lightcc` and every `horovod.<path>` to
`lightcc.<path>` (horovod.torch -> lightcc.torch, horovod.common.util -> lightcc.common.util,
...), but only if no real Horovod is installed; LIGHTCC_AS_HOROVOD=force maps it even then. The
alias modules are the lightcc module objects themselves, so `horovod.torch is lightcc.torch`.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType
from typing import Optional, Sequence

VAR = "LIGHTCC_AS_HOROVOD"
_ON = {"1", "true", "yes", "on"}
_OFF = {"", "0", "false", "no", "off"}


class _AliasLoader(importlib.abc.Loader):
    """Hands back the already-imported lightcc module and leaves its own spec in place."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._own_spec  # the import system set the alias's spec; restore lightcc's


class HorovodAliasFinder(importlib.abc.MetaPathFinder):
    """Maps the `horovod` package tree onto `lightcc`."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname != "horovod" and not fullname.startswith("horovod."):
            return None
        lightcc_name = "lightcc" + fullname[len("horovod"):]
        if importlib.util.find_spec(lightcc_name) is None:
            return None  # no such lightcc module: let the import fail as usual
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(lightcc_name), is_package=True)


def real_horovod_installed() -> bool:
    """Whether a real Horovod package can be found on sys.path (ignoring this alias)."""
    return importlib.machinery.PathFinder.find_spec("horovod") is not None


def install(force: bool = False) -> bool:
    """Put the finder first on sys.meta_path (once); returns whether the alias is active."""
    if any(isinstance(f, HorovodAliasFinder) for f in sys.meta_path):
        return True
    if not force and real_horovod_installed():
        return False
    sys.meta_path.insert(0, HorovodAliasFinder())
    return True


def install_from_env() -> bool:
    """Install the alias as LIGHTCC_AS_HOROVOD says (1: unless Horovod is installed; force: always)."""
    value = os.environ.get(VAR, "").strip().lower()
    if value in _OFF:
        return False
    if value == "force":
        return install(force=True)
    if value in _ON:
        return install(force=False)
    sys.stderr.write(f"lightcc: ignoring {VAR}={value!r}; use 1 (unless Horovod is installed) or force\n")
    return False


install_from_env()
