"""lightcc: a drop-in replacement for Horovod, faster on ordinary cloud networks.

`import lightcc as hvd` gives Horovod's API over NumPy arrays; `lightcc.torch`,
`lightcc.tensorflow` and `lightcc.keras` give the framework fronts.
"""
from lightcc.runner.api import run  # noqa: F401  (Horovod: `import horovod` gives run and __version__)
from lightcc.version import __version__  # noqa: F401

try:
    from lightcc.numpy import *  # noqa: F401,F403
    from lightcc.numpy import __all__ as _numpy_all
except ImportError as _err:  # the launcher and --check-build work without the core
    _numpy_all = []
    _core_error = _err  # Python unbinds the `as` name when the except block ends

    def __getattr__(name: str):
        raise ImportError(f"lightcc.{name} needs the compiled core: {_core_error}") from _core_error

__all__ = ["__version__", "run"] + list(_numpy_all)
