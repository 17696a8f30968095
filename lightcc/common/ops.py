"""Reduce ops, and the handle manager every front submits work through (op codes: op_spec.code(label))."""
from __future__ import annotations

import contextlib
import itertools
import threading
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

from lightcc.common import op_spec as _spec
from lightcc.common.op_args import TensorArgs, control
from lightcc.common.native import core

# Reduction ops (Horovod's values), from the core's table.
Average = _spec.reduce_op("Average")
Sum = _spec.reduce_op("Sum")
Adasum = _spec.reduce_op("Adasum")
Min = _spec.reduce_op("Min")
Max = _spec.reduce_op("Max")
Product = _spec.reduce_op("Product")
# Bitwise, for integer and bool tensors only (torch.distributed's BAND/BOR/BXOR).
Band = _spec.reduce_op("Band")
Bor = _spec.reduce_op("Bor")
Bxor = _spec.reduce_op("Bxor")

_OP_NAMES = _spec.REDUCE_OP_NAMES


def resolve_op(average: Optional[bool], op: Optional[int], default: int = Average) -> int:
    """Horovod's rule for the deprecated `average` flag versus `op`."""
    if average is not None and op is not None:
        raise ValueError("pass either `average` (deprecated) or `op`, not both")
    if average is not None:
        return Average if average else Sum
    if op is None:
        return default
    if op not in _OP_NAMES:
        raise ValueError(f"unknown reduction op {op!r}; use one of {', '.join(_spec.REDUCE_OPS)}")
    return op


def check_adasum(op: int, process_set: Any) -> None:
    """Horovod's limits on Adasum, raised alike on every rank before anything is queued:
    the global process set only, and a power-of-two number of ranks (NotImplementedError)."""
    if op != Adasum:
        return
    if process_set.process_set_id != 0:
        raise NotImplementedError("Adasum does not support non-global process sets yet.")
    n = process_set.size()
    if n & (n - 1):
        raise NotImplementedError(f"Running Adasum with non-power of 2 ranks is not supported yet "
                                  f"(this job has {n} ranks).")


_counter = itertools.count()


def alltoall_splits(values: Sequence[Any], kind: str) -> List[int]:
    """alltoall splits as a flat list of ints, refusing non-integer ones as Horovod does (int32).

    `kind` is the NumPy dtype kind of the container ('i', 'u', 'f', ...). The check depends only
    on the type, not the values, so every rank of a correct program passes or fails it alike;
    value errors (negative counts, a wrong sum) are the engine's, which tells every rank.
    """
    if len(values) and kind not in ("i", "u"):
        raise ValueError(f"alltoall splits must be integers (Horovod takes int32 splits); got values of kind "
                         f"{kind!r}: {list(values)[:8]}")
    return [int(v) for v in values]


def tensor_name(prefix: str, name: Optional[str]) -> str:
    """The engine-visible name: `<op>.<name>`, or `<op>.noname.<n>` for unnamed tensors."""
    if name is None or name == "":
        return f"{prefix}.noname.{next(_counter)}"
    return f"{prefix}.{name}"




# (buffer or None, output shape, received splits, value) for each tensor of a handle. The buffer
# is the front's own tensor when its Allocator made it.
CoreResult = Tuple[Any, List[int], List[int], int]

# allocate(index, shape, nbytes) -> (tensor, address): the output of tensor `index` of a submission,
# made by its framework when a device executor has sized it (csrc/bindings/outputs.h). Called on
# the thread that runs the collective, with the GIL; it must not wait for lightcc.
Allocator = Callable[[int, List[int], int], Tuple[Any, int]]


_local = threading.local()


@contextlib.contextmanager
def wait_at_once() -> Iterator[None]:
    """Work submitted inside is synchronized by this thread right after: the engine thread is
    not woken for it, because the waiting thread runs the engine itself (a synchronous op then
    costs no thread hand-off)."""
    _local.defer_wake = True
    try:
        yield
    finally:
        _local.defer_wake = False


def wake_now() -> bool:
    """Whether work submitted now should wake the engine thread (not inside wait_at_once)."""
    return not getattr(_local, "defer_wake", False)


@contextlib.contextmanager
def answering_with(convert: Callable[[Any], Any]) -> Iterator[None]:
    """Work this thread submits inside finishes with `convert(value)`: the conversion joins the
    submission's finish step in the core, so a front that answers in another framework's arrays
    (JAX) keeps no table of which handles need converting."""
    outer = getattr(_local, "convert", None)
    _local.convert = convert if outer is None else (lambda value: outer(convert(value)))
    try:
        yield
    finally:
        _local.convert = outer


def _finishing(finish: Callable[[List[CoreResult]], Any]) -> Callable[[List[CoreResult]], Any]:
    convert = getattr(_local, "convert", None)
    if convert is None:
        return finish
    return lambda results: convert(finish(results))


# Called (no arguments) before every submission to the engine: lightcc.torch.elastic.live_commit
# learns there whether a collective runs between an optimizer step and the next commit.
SUBMIT_OBSERVERS: List[Callable[[], None]] = []


def _observe() -> None:
    for observer in SUBMIT_OBSERVERS:
        observer()


class HandleManager:
    """The fronts' view of the core's handle registry, the only one: lightcc._core keeps each
    handle's tensors, the objects to keep alive and the step that makes its result. A front keeps
    nothing per handle; whatever synchronize must return is built by the finish step."""

    def submit(self, args: Sequence[TensorArgs], keepalive: Any,
               finish: Callable[[List[CoreResult]], Any], allocate: Optional[Allocator] = None,
               on_done: Optional[Callable[[int], None]] = None) -> int:
        """Queue one tensor or a group; `finish(results)` becomes synchronize's value.

        `allocate` makes the outputs whose size the collective decides (allgather, alltoall,
        reducescatter) with the tensors' framework; without it the core allocates them itself.
        `on_done(handle)` runs on lightcc's completion thread once every tensor has completed
        (futures); it should synchronize the handle, which then no longer blocks.
        """
        if SUBMIT_OBSERVERS:
            _observe()
        return core().submit([a.as_tuple() for a in args], wake_now(), keepalive, _finishing(finish), allocate,
                             on_done)

    def poll(self, handle: int) -> bool:
        """True once every tensor of the handle has completed (never blocks)."""
        return core().poll(handle)

    def synchronize(self, handle: int) -> Any:
        """Wait, release the handle and return its finished value (raises the op's error)."""
        return core().synchronize(handle)


handles = HandleManager()


def run_now(args: tuple) -> CoreResult:
    """Queue one tensor (a ``TensorArgs.as_tuple()``-shaped tuple) and wait for its result.

    The synchronous single-tensor ops' path: no handle id, no keep-alive record and no engine
    thread wake-up (the calling thread runs the engine), which for a small tensor cost more
    than the collective itself. The caller keeps the buffers alive (they are its arguments).
    """
    if len(args) == 12:  # written before device and stream existed: a host tensor
        args = (*args, -1, 0)
    if SUBMIT_OBSERVERS:
        _observe()
    return core().run(args)


def run_simple(op: int, name: str, process_set_id: int = 0, aux: Sequence[int] = ()) -> int:
    """Runs a tensor-less op (barrier, join, process-set change) and returns its value."""
    args = control(op, name, process_set_id, aux)
    if op == _spec.code("barrier"):  # the synchronous path, which on one host settles it in one direct step
        return run_now(args.as_tuple())[3]
    with wait_at_once():
        h = handles.submit([args], None, lambda results: results[0][3])
    return handles.synchronize(h)


_ps_counter = itertools.count()


def process_set_change(op: int, aux: Sequence[int]) -> int:
    """Adds or removes a process set on every rank; returns the new id (add)."""
    kind = "add" if op == _spec.code("add_process_set") else "remove"
    return run_simple(op, f"process_set.{kind}.{next(_ps_counter)}", 0, aux)
