"""lightcc: a drop-in replacement for Horovod, faster on ordinary cloud networks.

`import lightcc as hvd` gives Horovod's API over NumPy arrays; `lightcc.torch`,
`lightcc.tensorflow` and `lightcc.keras` give the framework fronts.

The NumPy front (and with it the compiled core) loads on first use of one of its names, not at
``import lightcc``: torch's backend autoload (``lightcc.c10d_autoload``) and the Horovod alias's
start-up hook (``lightcc.horovod_alias``) import modules of this package from every ``import
torch`` or interpreter start, and must stay cheap there; the launcher and ``--check-build`` work
without the core.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, List

from lightcc.version import __version__  # noqa: F401  (Horovod: `import horovod` gives __version__)

if TYPE_CHECKING:  # what `hvd.<name>` resolves to, for readers and type checkers
    from lightcc.numpy import *  # noqa: F401,F403
    from lightcc.runner.api import run  # noqa: F401


def _numpy_front() -> Any:
    try:
        import lightcc.numpy as front
    except ImportError as err:  # the launcher and --check-build work without the core
        raise ImportError(f"lightcc's NumPy front needs the compiled core: {err}") from err
    return front


def _is_submodule(name: str) -> bool:
    return any(os.path.exists(os.path.join(d, name + ".py")) or os.path.isdir(os.path.join(d, name))
               for d in __path__)  # noqa: F405  (the package's own __path__, not a star import's)


def __getattr__(name: str) -> Any:
    if name == "run":  # Horovod: `import horovod` gives run and __version__
        from lightcc.runner.api import run

        return run
    if (name.startswith("__") and name != "__all__") or _is_submodule(name):
        # `from lightcc import checkpoint` asks for the attribute before importing the submodule: no front for that.
        raise AttributeError(f"module 'lightcc' has no attribute {name!r}")
    front = _numpy_front()
    if name == "__all__":
        return ["__version__", "run", *front.__all__]
    if name not in front.__all__:
        raise AttributeError(f"module 'lightcc' has no attribute {name!r}")
    value = getattr(front, name)
    globals()[name] = value  # later look-ups skip this function (hvd.allreduce in a training loop)
    return value


def __dir__() -> List[str]:
    try:
        names = list(_numpy_front().__all__)
    except ImportError:
        names = []
    return sorted({*globals(), "run", *names})
