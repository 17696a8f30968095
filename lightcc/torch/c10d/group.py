"""The process group torch.distributed drives: each c10d collective as lightcc engine submissions.

DESIGN. torch calls these methods on the caller's thread; each queues its tensors with the
engine (no copy for the in-place collectives) and returns a Work wrapping a torch future that
lightcc's completion thread completes (lightcc/torch/futures.py). The engine runs the group's
collectives on its process set: set 0 for the default group, a set made of the members for
`new_group`. Collectives c10d has and the engine lacks are composed from the engine's: reduce is
an allreduce, gather and scatter are alltoalls with one non-empty side, and a send is a
broadcast in a process set of the pair (p2p.py).
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable, List, Optional, Sequence, Union

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import (  # the options torch hands each call (not all are in torch.distributed)
    AllgatherOptions, AllreduceCoalescedOptions, AllreduceOptions, AllToAllOptions, BarrierOptions, BroadcastOptions,
    GatherOptions, ReduceOptions, ReduceScatterOptions, ScatterOptions)

from lightcc.c10d_backend import BACKEND_NAME
from lightcc.common import op_args as _build
from lightcc.common import op_spec as _spec
from lightcc.common import ops as _ops
from lightcc.torch import backward_hold
from lightcc.torch import futures as _futures
from lightcc.torch import tensors as _t
from lightcc.torch.c10d import reduce_ops as _red
from lightcc.torch.c10d import sparse as _sparse
from lightcc.torch.c10d.naming import Names
from lightcc.torch.c10d.p2p import PointToPoint
from lightcc.torch.c10d.work import LightccWork, SourcedWork, completed


def _dense(tensor: torch.Tensor, what: str) -> torch.Tensor:
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"lightcc backend: {what} expects tensors, got {type(tensor).__name__}")
    if tensor.layout != torch.strided:
        raise ValueError(f"lightcc backend: {what} takes dense tensors (got {tensor.layout})")
    _t.dtype_code(tensor.dtype)
    return tensor


def _copy_back(tensors: Sequence[torch.Tensor], work: Sequence[torch.Tensor]) -> List[torch.Tensor]:
    """`tensors`, after copying in the result of each one that ran on a contiguous copy (in `work`)."""
    for t, w in zip(tensors, work):
        if w is not t:
            t.copy_(w)
    return list(tensors)


def _contiguous(tensors: Sequence[torch.Tensor]) -> List[torch.Tensor]:
    """What the engine runs on: each tensor itself, or a contiguous copy of a strided view."""
    return [t if t.is_contiguous() else t.contiguous() for t in tensors]


def _synchronous(opts: Optional[Union[AllreduceOptions, BroadcastOptions]]) -> bool:
    """Whether torch will wait for the call at once (async_op=False): it says so in the options."""
    return opts is not None and getattr(opts, "asyncOp", True) is False


def _flat(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous 2-D [1, numel] view (or copy) of `tensor`, as the engine's row-wise collectives take it."""
    return tensor.contiguous().reshape(1, -1)


class LightccProcessGroup(dist.ProcessGroup):
    """A torch.distributed process group whose collectives run in lightcc's engine.

    Made by torch through the backend registered as ``"lightcc"`` (lightcc.torch.c10d):
    ``init_process_group("lightcc")`` makes the default group (process set 0) and ``new_group``
    one per process set. Every method returns a Work whose future lightcc completes.
    """

    def __init__(self, rank: int, size: int, set_id: int, global_ranks: Sequence[int], tag: str,
                 timeout: timedelta, on_shutdown: Optional[Callable[[], None]] = None,
                 announce_in: Any = None, wait_limit: Optional[timedelta] = None) -> None:
        """`announce_in`: torch's store of the group when sends announce themselves there, so that
        receives from any source work (LIGHTCC_P2P_ANY_SOURCE, p2p.py). `wait_limit`: the group's
        timeout when it is shorter than the engine's, which the default group set (work.py)."""
        super().__init__(rank, size)
        self._rank = rank
        self._size = size
        self._set_id = set_id
        self._global_ranks = list(global_ranks)
        self._names = Names(tag)
        self._p2p = PointToPoint(tag, self._global_ranks[rank], announce_in, size, timeout)
        self._timeout = timeout
        self._wait_limit = wait_limit
        self._timed_out = False
        self._on_shutdown = on_shutdown
        self._closed = False

    # ---- identity ------------------------------------------------------------------------------

    def getBackendName(self) -> str:  # noqa: N802  (torch's method name)
        return BACKEND_NAME

    def __repr__(self) -> str:
        return f"LightccProcessGroup(rank={self._rank}, size={self._size}, process_set={self._set_id})"

    # torch keeps a group's name and description on its C++ backends; a Python group holds its own.
    def setGroupName(self, name: str) -> None:  # noqa: N802  (torch's method name)
        self._group_name = name

    def getGroupName(self) -> str:  # noqa: N802
        return getattr(self, "_group_name", "")

    def setGroupDesc(self, desc: str) -> None:  # noqa: N802
        self._group_desc = desc

    def getGroupDesc(self) -> str:  # noqa: N802
        return getattr(self, "_group_desc", "")

    @property
    def process_set_id(self) -> int:
        """The lightcc process set this group's collectives run on."""
        return self._set_id

    def _root(self, group_rank: int, what: str) -> int:
        if not 0 <= group_rank < self._size:
            raise ValueError(f"lightcc backend: {what} root rank {group_rank} is outside the group (size {self._size})")
        return self._global_ranks[group_rank]

    # ---- submission ----------------------------------------------------------------------------

    def _check_open(self) -> None:
        """Every call that queues work asks this first: a group that was shut down takes none."""
        if self._closed:
            raise RuntimeError(f"lightcc backend: {self!r} has been shut down")

    def _work(self, pending: _futures.Pending, kind: Any = LightccWork, *extra: Any) -> Any:
        """The Work of `pending`, holding the group's own timeout if it is shorter than the engine's."""
        if self._wait_limit is None:  # every DDP bucket comes here: no timer, nothing to describe
            return kind(pending, *extra)
        return kind(pending, *extra, limit=self._wait_limit, where=f"rank {self._global_ranks[self._rank]} in "
                    f"{self!r}", on_timeout=self._note_timeout)

    def _note_timeout(self) -> None:
        # A call that timed out stays queued in the engine until its own timeout: shutdown must not wait for it.
        self._timed_out = True

    def _submit(self, args: List[_ops.TensorArgs], keepalive: Any,
                finish: Callable[[List[_ops.CoreResult]], Any], hold: bool = False) -> Any:
        """Queues `args`; `hold`: host tensors, which may wait for the end of the backward pass (backward_hold.py)."""
        self._check_open()
        pending = backward_hold.launch(args, keepalive, finish, hold)
        self._names.hold([a.name for a in args], pending.outcome)
        return self._work(pending)

    def _now(self, args: _ops.TensorArgs, tensors: Sequence[torch.Tensor], work: Sequence[torch.Tensor]) -> Any:
        """A synchronous call (asyncOp false) of one tensor: the engine's synchronous path, which on
        one host runs a small allreduce as one direct step with no thread hand-off; its error
        raises here, in the caller."""
        self._check_open()
        backward_hold.HOLD.release()
        _ops.run_now(args.as_tuple())
        return completed(_copy_back(tensors, work))

    @staticmethod
    def _adapt(name: str, src: torch.Tensor, dst: Optional[torch.Tensor]) -> _build.Adapted:
        """`src` for the op builders; `dst` None: the op sizes its output."""
        return _t.adapt(src, name, _t.ptr(dst) if dst is not None else 0, list(src.shape))

    # ---- allreduce family ----------------------------------------------------------------------

    def _allreduce(self, tensors: Sequence[torch.Tensor], reduce_op: Any, what: str, sync: bool = False) -> Any:
        tensors = [_dense(t, what) for t in tensors]
        work = _contiguous(tensors)
        args = []
        for t in work:
            code = _red.code(reduce_op, t.dtype, what)
            name = self._names.take("allreduce", [t], (code,))
            args.append(_build.allreduce(self._adapt(name, t, t), code, process_set_id=self._set_id))
        if sync and len(args) == 1 and not _t.is_device(work[0]):
            return self._now(args[0], tensors, work)

        return self._submit(args, (tensors, work), lambda _: _copy_back(tensors, work),
                            hold=not any(_t.is_device(t) for t in work))

    def allreduce(self, tensors: List[torch.Tensor], opts: Optional[AllreduceOptions] = None) -> Any:
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        if _sparse.is_sparse(tensors):
            args, keepalive, finish = _sparse.allreduce_args(
                tensors, op, self._set_id, lambda part: self._names.take("allgather", [part], ("sparse",), shaped=False))
            return self._submit(args, keepalive, finish)
        return self._allreduce(tensors, op, "allreduce", sync=_synchronous(opts))

    def allreduce_coalesced(self, tensors: List[torch.Tensor], opts: Optional[AllreduceCoalescedOptions] = None) -> Any:
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        return self._allreduce(tensors, op, "allreduce_coalesced")

    def reduce(self, tensors: List[torch.Tensor], opts: Optional[ReduceOptions] = None) -> Any:
        # Every member gets the result (torch leaves non-roots' tensors unspecified): one allreduce
        # costs what a reduce to the root followed by nothing would on a ring, and keeps one path.
        self._root(opts.rootRank, "reduce")
        return self._allreduce(tensors, opts.reduceOp, "reduce")

    # ---- broadcast -----------------------------------------------------------------------------

    def broadcast(self, tensors: List[torch.Tensor], opts: Optional[BroadcastOptions] = None) -> Any:
        root = self._root(opts.rootRank if opts is not None else 0, "broadcast")
        tensors = [_dense(t, "broadcast") for t in tensors]
        work = _contiguous(tensors)
        args = [_build.broadcast(self._adapt(self._names.take("broadcast", [t], (root,)), t, t), root, self._set_id)
                for t in work]
        if _synchronous(opts) and len(args) == 1 and not _t.is_device(work[0]):
            return self._now(args[0], tensors, work)

        return self._submit(args, (tensors, work), lambda _: _copy_back(tensors, work))

    # ---- allgather family ----------------------------------------------------------------------

    def _gather_rows(self, inputs: Sequence[torch.Tensor], place: Callable[[int, torch.Tensor], None],
                     value: Any, what: str) -> Any:
        """Allgathers each input as one row [1, numel]; place(i, rows [size, numel]) writes input i's result."""
        flats = [_flat(_dense(t, what)) for t in inputs]
        args = [_build.allgather(self._adapt(self._names.take("allgather", [f]), f, None), self._set_id) for f in flats]

        def finish(results: List[_ops.CoreResult]) -> Any:
            for i, (r, f) in enumerate(zip(results, flats)):
                place(i, _t.wrap(r, f.dtype, f.device))
            return value

        return self._submit(args, flats, finish)

    def allgather(self, output_tensors: List[List[torch.Tensor]], input_tensors: List[torch.Tensor],
                  opts: Optional[AllgatherOptions] = None) -> Any:
        self._check_lists(output_tensors, input_tensors, "allgather")

        def place(i: int, rows: torch.Tensor) -> None:
            for j, out in enumerate(output_tensors[i]):
                out.copy_(rows[j].view(out.shape))

        return self._gather_rows(input_tensors, place, output_tensors, "allgather")

    def allgather_coalesced(self, output_lists: List[List[torch.Tensor]], input_list: List[torch.Tensor],
                            opts: Optional[AllgatherOptions] = None) -> Any:
        # Rank-major, unlike allgather: output_lists[r][i] receives member r's input i.
        if len(output_lists) != self._size or any(len(outs) != len(input_list) for outs in output_lists):
            raise ValueError(f"lightcc backend: all_gather_coalesced needs {self._size} output lists of "
                             f"{len(input_list)} tensors each")

        def place(i: int, rows: torch.Tensor) -> None:
            for r in range(self._size):
                out = output_lists[r][i]
                out.copy_(rows[r].view(out.shape))

        return self._gather_rows(input_list, place, output_lists, "all_gather_coalesced")

    def _allgather_base(self, output: torch.Tensor, input: torch.Tensor,  # noqa: A002
                        opts: Optional[AllgatherOptions] = None) -> Any:
        self._check_base(output, input, "all_gather_into_tensor", gather=True)
        return self._gather_rows([input], lambda i, rows: output.view(self._size, -1).copy_(rows), [output],
                                 "all_gather_into_tensor")

    def allgather_into_tensor_coalesced(self, outputs: List[torch.Tensor], inputs: List[torch.Tensor],
                                        opts: Optional[AllgatherOptions] = None) -> Any:
        for o, i in zip(outputs, inputs):
            self._check_base(o, i, "all_gather_into_tensor", gather=True)
        return self._gather_rows(inputs, lambda i, rows: outputs[i].view(self._size, -1).copy_(rows), outputs,
                                 "all_gather_into_tensor")

    # ---- reduce-scatter family -----------------------------------------------------------------

    def _scatter_rows(self, stacked: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor], reduce_op: Any,
                      what: str) -> Any:
        """Reduce-scatters each [size, numel] input so that member i keeps row i, written to outputs[i]."""
        args = []
        for s in stacked:
            code = _red.code(reduce_op, s.dtype, what)
            name = self._names.take("reducescatter", [s], (code,))
            args.append(_build.reducescatter(self._adapt(name, s, None), code, process_set_id=self._set_id))

        def finish(results: List[_ops.CoreResult]) -> List[torch.Tensor]:
            for r, s, out in zip(results, stacked, outputs):
                out.copy_(_t.wrap(r, s.dtype, s.device).view(out.shape))
            return list(outputs)

        return self._submit(args, stacked, finish)

    def reduce_scatter(self, output_tensors: List[torch.Tensor], input_tensors: List[List[torch.Tensor]],
                       opts: Optional[ReduceScatterOptions] = None) -> Any:
        if len(output_tensors) != len(input_tensors):
            raise ValueError("lightcc backend: reduce_scatter needs one input list per output tensor")
        stacked = []
        for out, ins in zip(output_tensors, input_tensors):
            if len(ins) != self._size:
                raise ValueError(f"lightcc backend: reduce_scatter needs {self._size} input tensors, got {len(ins)}")
            stacked.append(torch.stack([_dense(t, "reduce_scatter").reshape(-1) for t in ins]))
        return self._scatter_rows(stacked, output_tensors, opts.reduceOp, "reduce_scatter")

    def _reduce_scatter_base(self, output: torch.Tensor, input: torch.Tensor,  # noqa: A002
                             opts: Optional[ReduceScatterOptions] = None) -> Any:
        self._check_base(output, input, "reduce_scatter_tensor", gather=False)
        return self._scatter_rows([input.contiguous().view(self._size, -1)], [output], opts.reduceOp,
                                  "reduce_scatter_tensor")

    def reduce_scatter_tensor_coalesced(self, outputs: List[torch.Tensor], inputs: List[torch.Tensor],
                                        opts: Optional[ReduceScatterOptions] = None) -> Any:
        for o, i in zip(outputs, inputs):
            self._check_base(o, i, "reduce_scatter_tensor", gather=False)
        return self._scatter_rows([i.contiguous().view(self._size, -1) for i in inputs], outputs, opts.reduceOp,
                                  "reduce_scatter_tensor")

    # ---- alltoall family, gather and scatter ---------------------------------------------------

    def _exchange(self, send: torch.Tensor, splits: List[int], what: str,
                  finish_rows: Callable[[torch.Tensor, List[int]], Any]) -> Any:
        """One engine alltoall of `send`'s rows, splits[i] rows to member i; finish_rows(received, their splits)."""
        send = _dense(send, what).contiguous()
        name = self._names.take("alltoall", [send], (what,), shaped=False)
        args = [_build.alltoall(self._adapt(name, send, None), splits, self._set_id)]

        def finish(results: List[_ops.CoreResult]) -> Any:
            received = _t.wrap(results[0], send.dtype, send.device)
            return finish_rows(received, [int(x) for x in results[0][2]])

        return self._submit(args, send, finish)

    def alltoall_base(self, output: torch.Tensor, input: torch.Tensor, output_split_sizes: List[int],  # noqa: A002
                      input_split_sizes: List[int], opts: Optional[AllToAllOptions] = None) -> Any:
        rows = input.shape[0] if input.dim() else 1
        if input_split_sizes:
            if len(input_split_sizes) != self._size:
                raise ValueError(f"lightcc backend: all_to_all_single needs {self._size} input split sizes, "
                                 f"got {len(input_split_sizes)}")
            splits = [int(s) for s in input_split_sizes]
        else:
            if rows % self._size:
                raise ValueError(f"lightcc backend: all_to_all_single without split sizes needs the first "
                                 f"dimension ({rows}) divisible by the group size ({self._size})")
            splits = [rows // self._size] * self._size
        send = input if input.dim() else input.reshape(1)

        def place(received: torch.Tensor, got: List[int]) -> List[torch.Tensor]:
            if received.numel() != output.numel():
                raise RuntimeError(f"lightcc backend: all_to_all_single received {received.numel()} elements for an "
                                   f"output of {output.numel()} (received splits {got})")
            output.copy_(received.view(output.shape))
            return [output]

        return self._exchange(send, splits, "all_to_all_single", place)

    def alltoall(self, output_tensors: List[torch.Tensor], input_tensors: List[torch.Tensor],
                 opts: Optional[AllToAllOptions] = None) -> Any:
        if len(input_tensors) != self._size or len(output_tensors) != self._size:
            raise ValueError(f"lightcc backend: all_to_all needs {self._size} input and output tensors")
        send = torch.cat([_dense(t, "all_to_all").reshape(-1) for t in input_tensors])
        splits = [t.numel() for t in input_tensors]

        def place(received: torch.Tensor, got: List[int]) -> List[torch.Tensor]:
            offset = 0
            for out, n in zip(output_tensors, got):
                if n != out.numel():
                    raise RuntimeError(f"lightcc backend: all_to_all received {n} elements for an output of "
                                       f"{out.numel()}")
                out.copy_(received[offset:offset + n].view(out.shape))
                offset += n
            return list(output_tensors)

        return self._exchange(send, splits, "all_to_all", place)

    def gather(self, output_tensors: List[List[torch.Tensor]], input_tensors: List[torch.Tensor],
               opts: Optional[GatherOptions] = None) -> Any:
        root = opts.rootRank
        self._root(root, "gather")
        if len(input_tensors) != 1:
            raise ValueError("lightcc backend: gather takes one input tensor per rank")
        src = _dense(input_tensors[0], "gather").reshape(-1)
        splits = [src.numel() if i == root else 0 for i in range(self._size)]
        outs = output_tensors[0] if self._rank == root else []
        if self._rank == root and len(outs) != self._size:
            raise ValueError(f"lightcc backend: gather's root needs {self._size} output tensors, got {len(outs)}")

        def place(received: torch.Tensor, got: List[int]) -> Any:
            offset = 0
            for out, n in zip(outs, got):
                out.copy_(received[offset:offset + n].view(out.shape))
                offset += n
            return output_tensors

        return self._exchange(src, splits, "gather", place)

    def scatter(self, output_tensors: List[torch.Tensor], input_tensors: List[List[torch.Tensor]],
                opts: Optional[ScatterOptions] = None) -> Any:
        root = opts.rootRank
        self._root(root, "scatter")
        out = output_tensors[0]
        if self._rank == root:
            ins = input_tensors[0]
            if len(ins) != self._size:
                raise ValueError(f"lightcc backend: scatter's root needs {self._size} input tensors, got {len(ins)}")
            send = torch.cat([_dense(t, "scatter").reshape(-1) for t in ins])
            splits = [t.numel() for t in ins]
        else:
            send = torch.empty(0, dtype=out.dtype, device=out.device)
            splits = [0] * self._size

        def place(received: torch.Tensor, got: List[int]) -> List[torch.Tensor]:
            out.copy_(received.view(out.shape))
            return [out]

        return self._exchange(send, splits, "scatter", place)

    # ---- barrier and shutdown ------------------------------------------------------------------

    def barrier(self, opts: Optional[BarrierOptions] = None) -> Any:
        self._check_open()
        name = self._names.take("barrier", [])
        args = [_build.control(_spec.code("barrier"), name, self._set_id)]
        return self._submit(args, None, lambda results: [])

    # ---- point-to-point (p2p.py) ----------------------------------------------------------------

    def _one(self, tensors: List[torch.Tensor], what: str) -> torch.Tensor:
        self._check_open()
        if len(tensors) != 1:
            raise ValueError(f"lightcc backend: {what} takes one tensor, got {len(tensors)}")
        return _dense(tensors[0], what)

    def send(self, tensors: List[torch.Tensor], dst: int, tag: int = 0) -> Any:
        tensor = self._one(tensors, "send")
        return self._work(self._p2p.send(tensor, self._root(dst, "send"), tag))

    def recv(self, tensors: List[torch.Tensor], src: int, tag: int = 0) -> Any:
        tensor = self._one(tensors, "recv")
        return self._work(self._p2p.recv(tensor, self._root(src, "recv"), tag))

    def recv_anysource(self, tensors: List[torch.Tensor], tag: int = 0) -> Any:
        tensor = self._one(tensors, "recv")
        received, source = self._p2p.recv_any(tensor, tag)
        return self._work(received, SourcedWork, lambda: self._global_ranks.index(source()))

    def shutdown(self) -> None:
        """torch's destroy_process_group: waits for this group's calls, then lets go of the engine."""
        if self._closed:
            return
        self._closed = True
        self._p2p.close()
        for fut in [] if self._timed_out else self._names.pending() + self._p2p.pending():
            try:
                fut.wait()
            except Exception:  # noqa: BLE001  (each call's own waiter saw its error)
                pass
        self._names.forget()
        if self._on_shutdown is not None:
            self._on_shutdown()

    def abort(self) -> None:
        """torch's abort: as shutdown, without waiting for calls in flight (they fail)."""
        self._names.forget()
        self._closed = True
        self._p2p.close()
        if self._on_shutdown is not None:
            self._on_shutdown()

    # torch 2.13's names for the tensor forms (older torch calls the underscored ones above).
    all_gather_single = _allgather_base
    all_gather_single_coalesced = allgather_into_tensor_coalesced
    reduce_scatter_single = _reduce_scatter_base
    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced
    all_to_all_single = alltoall_base

    # ---- argument checks -----------------------------------------------------------------------

    def _check_lists(self, outputs: List[List[torch.Tensor]], inputs: List[torch.Tensor], what: str) -> None:
        if len(outputs) != len(inputs):
            raise ValueError(f"lightcc backend: {what} needs one output list per input tensor")
        for outs, t in zip(outputs, inputs):
            if len(outs) != self._size:
                raise ValueError(f"lightcc backend: {what} needs {self._size} output tensors, got {len(outs)}")
            for o in outs:
                if o.numel() != t.numel() or o.dtype != t.dtype:
                    raise ValueError(f"lightcc backend: {what} outputs must match the input's size and dtype "
                                     f"({t.numel()} x {t.dtype}), got {o.numel()} x {o.dtype}")

    def _check_base(self, output: torch.Tensor, input: torch.Tensor, what: str, gather: bool) -> None:  # noqa: A002
        big, small = (output, input) if gather else (input, output)
        if big.numel() != small.numel() * self._size:
            raise ValueError(f"lightcc backend: {what} needs the {'output' if gather else 'input'} to hold "
                             f"{self._size} x {small.numel()} elements, got {big.numel()}")
        if output.dtype != input.dtype:
            raise ValueError(f"lightcc backend: {what} needs one dtype, got {input.dtype} in and {output.dtype} out")
        if not output.is_contiguous():
            raise ValueError(f"lightcc backend: {what} needs a contiguous output tensor")
