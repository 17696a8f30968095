"""One rank of ``run()`` (lightcc.runner.api): load the pickled function, call it, pickle the result."""
from __future__ import annotations

import os
import pickle
import sys


def _rank() -> int:
    """This worker's rank: the engine's when the function initialised it (an elastic worker's rank
    is only known that way), else the launcher's variables."""
    from lightcc.common import basics

    if basics.is_initialized():
        return basics.rank()
    from lightcc.common.launch_env import detect

    return detect().rank


def main(folder: str) -> int:
    with open(os.path.join(folder, "func.pkl"), "rb") as fh:
        func, args, kwargs = pickle.load(fh)
    result = func(*args, **kwargs)
    rank = _rank()
    path = os.path.join(folder, f"result.{rank}.pkl")
    with open(path + ".tmp", "wb") as fh:
        pickle.dump(result, fh)
    os.replace(path + ".tmp", path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
