"""Exceptions raised by every front; Horovod's names are aliases of lightcc's."""
from __future__ import annotations

from lightcc.common.native import core
from lightcc.common.util import HorovodVersionMismatchError, get_version_mismatch_message  # noqa: F401

#: Raised on every rank when a collective fails for a reason that is not the caller's own
#: argument error: ranks disagree on an operation, a peer died or timed out, shutdown raced.
LightCCInternalError = core().LightCCInternalError
HorovodInternalError = LightCCInternalError
#: The LightCCInternalError raised when ranks disagree on an operation (shape, dtype, op, root,
#: or a rank that has joined): Horovod's error response, a FailedPreconditionError under TF graphs.
LightCCMismatchError = core().LightCCMismatchError


class HostsUpdatedInterrupt(RuntimeError):
    """Horovod's elastic-mode signal that the host set changed: raised by `state.commit()` on every rank."""

    def __init__(self, skip_sync: bool = False) -> None:
        super().__init__("hosts updated")
        self.skip_sync = skip_sync
