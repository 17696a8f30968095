"""The NumPy front: Horovod's API over numpy.ndarray (what `import lightcc as hvd` gives)."""
from lightcc.numpy.mpi_ops import *  # noqa: F401,F403
from lightcc.numpy.mpi_ops import __all__  # noqa: F401
