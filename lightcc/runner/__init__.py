"""lightccrun, lightcc's job launcher: ``lightccrun`` / ``python -m lightcc.runner``.

Modules: ``launch`` (command line), ``env_flags`` (flag -> variable table), ``hosts`` (host lists,
slot assignment), ``plan`` (per-rank environment), ``remote`` (launch-template commands),
``spawn`` (running and stopping ranks), ``mpi`` (``--mpi``), ``check_build`` (``--check-build``),
``api`` (``run()``, Horovod's programmatic launcher) and ``task`` (one rank of it).
"""
from lightcc.runner.api import run  # noqa: F401
