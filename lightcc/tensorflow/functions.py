"""Variable and Python-object helpers for TF: broadcast_variables, broadcast_object(_fn), allgather_object."""
from __future__ import annotations

import io
from typing import Any, Callable, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from lightcc.common.basics import rank
from lightcc.common.ops import tensor_name
from lightcc.common.process_sets import ProcessSet, _id_of, global_process_set
from lightcc.tensorflow import _host
from lightcc.tensorflow import _util as u
from lightcc.tensorflow import mpi_ops as _m

try:  # cloudpickle also handles lambdas and locally defined classes, as Horovod's does
    import cloudpickle as _pickle
except ImportError:  # pragma: no cover - plain pickle covers ordinary objects
    import pickle as _pickle  # type: ignore[no-redef]


def broadcast_variables(variables: Sequence[Any], root_rank: int, process_set: ProcessSet = global_process_set,
                        inplace: bool = False) -> Optional[tf.Operation]:
    """Assign root_rank's values to `variables` (tf.Variable or Keras variables) on every rank.

    All variables travel as one fused broadcast. Eagerly this returns None; while tracing it
    returns an op grouping the assignments. `inplace` is accepted for Horovod compatibility
    (the values are always broadcast into fresh buffers and then assigned).
    """
    variables = list(variables)
    if not variables:
        return None if u.executing_eagerly() else tf.no_op()
    values = _m._grouped_broadcast([u.as_tensor(v) for v in variables], root_rank, "broadcast_variables",
                                   process_set=process_set)
    assigns = [v.assign(x) for v, x in zip(variables, values)]
    if u.executing_eagerly():
        return None
    return tf.group(*[a for a in assigns if isinstance(a, (tf.Tensor, tf.Operation)) or hasattr(a, "op")])


def _dumps(obj: Any) -> np.ndarray:
    buf = io.BytesIO()
    _pickle.dump(obj, buf)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)


def _loads(a: np.ndarray) -> Any:
    return _pickle.loads(a.tobytes())


def broadcast_object(obj: Any, root_rank: int = 0, session: Any = None, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> Any:
    """Pickle `obj` (cloudpickle when installed) on root_rank; every rank returns a copy.

    Runs eagerly on host memory; `session` is accepted for Horovod (TF1) compatibility.
    """
    base = tensor_name("broadcast_object", name or type(obj).__name__)
    set_id = _id_of(process_set)
    payload = _dumps(obj) if rank() == root_rank else np.zeros(0, np.uint8)
    length = _host.broadcast([np.array([payload.size], np.int64)], f"{base}.sz", root_rank, set_id)[0]
    buf = payload if rank() == root_rank else np.zeros(int(length[0]), np.uint8)
    data = _host.broadcast([buf], f"{base}.t", root_rank, set_id)[0]
    return _loads(data)


def broadcast_object_fn(root_rank: int = 0, session: Any = None, name: Optional[str] = None,
                        process_set: ProcessSet = global_process_set) -> Callable[[Any], Any]:
    """A function `fn(obj)` that broadcasts `obj` from root_rank (Horovod's TF1-friendly form)."""
    def fn(obj: Any) -> Any:
        return broadcast_object(obj, root_rank, session, name, process_set)

    return fn


def allgather_object(obj: Any, session: Any = None, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> List[Any]:
    """Pickle `obj` on every rank; returns everyone's objects in rank order."""
    base = tensor_name("allgather_object", name or type(obj).__name__)
    set_id = _id_of(process_set)
    payload = _dumps(obj)
    sizes = _host.allgather([np.array([payload.size], np.int64)], f"{base}.sz", set_id)[0]
    data = _host.allgather([payload], f"{base}.t", set_id)[0]
    out, off = [], 0
    for n in sizes.tolist():
        out.append(_loads(data[off:off + n]))
        off += n
    return out
