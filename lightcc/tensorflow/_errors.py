"""Turns lightcc's errors into the tf.errors classes Horovod's TF ops raise, eagerly and in graphs.

Horovod's TF ops fail with FailedPreconditionError when ranks disagree (shape, dtype, op, root,
a joined rank) and InvalidArgumentError for a caller's bad argument; TF users catch those
(`except tf.errors.OpError`). Eagerly the exception is converted here. In a graph the engine
call runs inside tf.numpy_function, and TF turns every Python exception other than ValueError /
TypeError (InvalidArgumentError) into UnknownError, so a mismatch cannot simply be raised
there. The body instead reports it as a status plus a path, and the graph raises through a
kernel whose error code is FAILED_PRECONDITION and whose message carries a runtime string:
ReadFile on a directory ("<path>; Is a directory"). The directory is created on failure only,
named after lightcc's message (rank, tensor, peer), under a per-process temporary directory
removed at exit.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import threading
from typing import Optional

import tensorflow as tf

from lightcc.common.exceptions import LightCCMismatchError

_NAME_MAX = 200  # bytes per path component stay under every filesystem's 255
_lock = threading.Lock()
_root: Optional[str] = None


class TFMismatchError(tf.errors.FailedPreconditionError, LightCCMismatchError):
    """Ranks disagree on a collective: Horovod's FailedPreconditionError, still a LightCCMismatchError
    (so a LightCCInternalError) for code written against lightcc."""


class TFInvalidArgumentError(tf.errors.InvalidArgumentError, ValueError):
    """A caller's bad argument: Horovod's InvalidArgumentError, still the ValueError lightcc raised."""


def as_tf_error(e: BaseException) -> BaseException:
    """The tf.errors exception Horovod raises for `e` (or `e` itself when it has no TF class)."""
    if isinstance(e, tf.errors.OpError):
        return e
    if isinstance(e, LightCCMismatchError):
        return TFMismatchError(None, None, str(e))
    if isinstance(e, ValueError):
        return TFInvalidArgumentError(None, None, str(e))
    return e


def _errors_root() -> str:
    global _root
    with _lock:
        if _root is None:
            _root = tempfile.mkdtemp(prefix=f"lightcc-tf-errors-{os.getpid()}-")
            atexit.register(shutil.rmtree, _root, True)
        return _root


def message_path(message: str) -> str:
    """A fresh directory whose path spells `message` (split into components where long)."""
    text = re.sub(r"[/\x00\n]", lambda m: {"/": "|", "\x00": " ", "\n": " "}[m.group()], message)
    parts, rest = [], text
    while rest:
        cut = rest.encode()[:_NAME_MAX].decode(errors="ignore")
        parts.append(cut if cut.strip(".") else cut + "_")
        rest = rest[len(cut):]
    path = os.path.join(tempfile.mkdtemp(dir=_errors_root()), *parts)
    os.makedirs(path, exist_ok=True)
    return path


def raise_if_failed(status: tf.Tensor, path: tf.Tensor) -> tf.Tensor:
    """A graph op that raises FailedPreconditionError carrying `path` when status != 0."""
    return tf.cond(tf.equal(status, 0), lambda: tf.constant(b""), lambda: tf.io.read_file(path))


def invalid_argument(message: str) -> TFInvalidArgumentError:
    """The error for a caller's bad argument found before anything is queued."""
    return TFInvalidArgumentError(None, None, message)
