"""Test fault: the root (rank 0) of generation ELASTIC_DDP_TEST_DIE_IN_SYNC is SIGKILLed as it starts sending the state.

Imported by this folder's sitecustomize only when the variable is set (elastic DDP and DiLoCo
tests); the others in that generation are then waiting for its broadcast, as in a real failure
mid-transfer. For DiLoCo the root dies as it gathers what it sends (elastic_diloco._root_state).
"""
import os
import signal

from lightcc.common import basics
from lightcc.common.elastic_worker import session
from lightcc.torch.elastic import state as _state

_GENERATION = int(os.environ["ELASTIC_DDP_TEST_DIE_IN_SYNC"])
_sync = _state.ModelStateHandler.sync


def _dies_here() -> None:
    """SIGKILL to this process when it is in the generation under test."""
    s = session()
    if s is not None and s.generation == _GENERATION:
        os.kill(os.getpid(), signal.SIGKILL)


def _dying_sync(self: _state.ModelStateHandler, root_rank: int = 0) -> None:
    if basics.rank() == root_rank:
        _dies_here()
    _sync(self, root_rank)


_state.ModelStateHandler.sync = _dying_sync


try:
    from lightcc.torch.lowcomm import elastic_diloco as _diloco

    _root_state = _diloco._root_state

    def _dying_root_state(d, heavy):  # noqa: ANN001, ANN202
        _dies_here()
        return _root_state(d, heavy)

    _diloco._root_state = _dying_root_state
except ImportError:  # a build without the torch front
    pass
