"""Collectives on accelerator tensors through torch.distributed's NCCL backend (gloo for CPU tensors).

DESIGN. lightcc's engine works on host memory; CUDA tensors are reduced where they live, by
NCCL, driven through torch's c10d backend objects (`ProcessGroupNCCL`). One backend object per
(backend, process set) is made on first use, by the set's members only: the set's first rank
opens a torch `TCPStore` on a free port and sends (host, port) to the other members with a
lightcc broadcast over the engine, and every member builds the backend on that store. Nothing
here negotiates: as with NCCL in torch DDP, every member must start device collectives in the
same order (DistributedOptimizer's hooks do, on identical graphs). The same code drives
torch's gloo backend when handed CPU tensors, which is how the test suite exercises it on a
machine without a GPU; the CPU front never sends CPU tensors here.

Each call returns a `LocalHandle` for lightcc.torch.collectives; its wait() returns the list of
outputs. Average is Sum then a division (truncating for integers, as the engine does).
"""
from __future__ import annotations

import contextlib
import datetime
import socket
import threading
from typing import Any, Dict, Iterator, List, Sequence, Set, Tuple

import torch

from lightcc.common import ops as _ops
from lightcc.common.process_sets import ProcessSet
from lightcc.torch.collectives import LocalHandle

_TIMEOUT = datetime.timedelta(seconds=300)
_lock = threading.Lock()
_backends: Dict[Tuple[str, int, Tuple[int, ...]], Tuple[Any, Any]] = {}  # key -> (backend, its store)
_in_flight: Set[Tuple[int, str]] = set()


def _dist() -> Any:
    import torch.distributed as dist

    if not dist.is_available():
        raise ValueError("accelerator tensors need torch.distributed, which this torch build lacks")
    return dist


def cuda_built() -> bool:
    """Whether this torch can run lightcc's device path: CUDA compiled in and NCCL available."""
    import torch.distributed as dist

    return bool(torch.backends.cuda.is_built() and dist.is_available() and dist.is_nccl_available())


def nccl_built() -> int:
    """NCCL's version code (major*10000 + minor*100 + patch) as torch ships it, else 0."""
    if not cuda_built():
        return 0
    major, minor, patch = torch.cuda.nccl.version()[:3]
    return int(major) * 10000 + int(minor) * 100 + int(patch)


def _backend_name(tensors: Sequence[torch.Tensor]) -> str:
    return "nccl" if tensors[0].device.type == "cuda" else "gloo"


def _open_store(process_set: ProcessSet) -> Any:
    """A TCPStore shared by the set's members: its first rank serves it, the others connect."""
    from lightcc.common.basics import local_size, rank, size
    from lightcc.numpy import broadcast_object

    dist = _dist()
    root = process_set.ranks[0]
    store = None
    addr: Tuple[str, int] = ("", 0)
    if rank() == root:
        host = "127.0.0.1" if local_size() == size() else socket.gethostbyname(socket.gethostname())
        store = dist.TCPStore("0.0.0.0", 0, process_set.size(), True, timeout=_TIMEOUT, wait_for_workers=False)
        addr = (host, int(store.port))
    host, port = broadcast_object(addr, root, name=f"lightcc.device_store.{process_set.process_set_id}",
                                  process_set=process_set)
    return store if store is not None else dist.TCPStore(host, port, process_set.size(), False, timeout=_TIMEOUT)


def _backend(kind: str, process_set: ProcessSet) -> Any:
    key = (kind, int(process_set.process_set_id or 0), tuple(process_set.ranks))
    with _lock:
        found = _backends.get(key)
    if found is not None:
        return found[0]
    dist = _dist()
    store = _open_store(process_set)
    prefixed = dist.PrefixStore(f"lightcc/{kind}/{key[1]}", store)
    if kind == "nccl":
        opts = dist.ProcessGroupNCCL.Options()
        opts._timeout = _TIMEOUT
        made = dist.ProcessGroupNCCL(prefixed, process_set.rank(), process_set.size(), opts)
    else:
        made = dist.ProcessGroupGloo(prefixed, process_set.rank(), process_set.size(), _TIMEOUT)
    with _lock:
        _backends[key] = (made, store)  # the store must outlive the backend
    return made


def reset() -> None:
    """Forget every backend (after shutdown, a new init makes new ones)."""
    with _lock:
        _backends.clear()
        _in_flight.clear()


def _claim(names: Sequence[str], process_set: ProcessSet) -> List[Tuple[int, str]]:
    keys = [(int(process_set.process_set_id or 0), n) for n in names]
    with _lock:
        for k in keys:
            if k in _in_flight:
                raise ValueError(f"a tensor named '{k[1]}' is already in flight in process set {k[0]}; "
                                 "wait for it (synchronize) or give this one another name")
        _in_flight.update(keys)
    return keys


@contextlib.contextmanager
def _claimed(names: Sequence[str], process_set: ProcessSet) -> Iterator[List[Tuple[int, str]]]:
    """Claim the names for the block; a failure before the handle exists gives them back."""
    keys = _claim(names, process_set)
    try:
        yield keys
    except BaseException:
        with _lock:
            _in_flight.difference_update(keys)
        raise


def _handle(works: List[Any], keys: List[Tuple[int, str]], finish: Any) -> LocalHandle:
    done = threading.Event()
    result: List[Any] = []

    def wait() -> Any:
        if not done.is_set():
            try:
                for w in works:
                    w.wait()
                result.append(finish())
            finally:
                with _lock:
                    _in_flight.difference_update(keys)
                done.set()
        return result[0]

    return LocalHandle(lambda: all(w.is_completed() for w in works), wait)


def _reduce_op(op: int) -> Any:
    r = _dist().ReduceOp
    return {_ops.Sum: r.SUM, _ops.Average: r.SUM, _ops.Min: r.MIN, _ops.Max: r.MAX, _ops.Product: r.PRODUCT}[op]


def _divide(t: torch.Tensor, n: int) -> None:
    if t.dtype.is_floating_point:
        t.div_(n)
    else:
        t.copy_(torch.div(t, n, rounding_mode="trunc"))


def _scale(t: torch.Tensor, factor: float) -> None:
    if factor != 1.0:
        if t.dtype.is_floating_point:
            t.mul_(factor)
        else:
            t.copy_((t.double() * factor).to(t.dtype))


def allreduce(ins: Sequence[torch.Tensor], outs: Sequence[torch.Tensor], names: Sequence[str], op: int,
              prescale: float, postscale: float, process_set: ProcessSet) -> LocalHandle:
    """Reduce each input into its output (they may be the same tensors)."""
    dist = _dist()
    pg = _backend(_backend_name(ins), process_set)
    with _claimed(names, process_set) as keys:
        works = []
        for a, o in zip(ins, outs):
            if o is not a:
                o.copy_(a)
            _scale(o, prescale)
            opts = dist.AllreduceOptions()
            opts.reduceOp = _reduce_op(op)
            works.append(pg.allreduce([o], opts))

        def finish() -> List[torch.Tensor]:
            for o in outs:
                if op == _ops.Average:
                    _divide(o, process_set.size())
                _scale(o, postscale)
            return list(outs)

        return _handle(works, keys, finish)


def allgather(ins: Sequence[torch.Tensor], names: Sequence[str], process_set: ProcessSet) -> LocalHandle:
    """Concatenate every member's tensor along dim 0 (first dimensions may differ)."""
    pg = _backend(_backend_name(ins), process_set)
    with _claimed(names, process_set) as keys:
        n = process_set.size()
        mine = torch.tensor([int(t.shape[0]) for t in ins], dtype=torch.int64, device=ins[0].device)
        all_dims = [torch.empty_like(mine) for _ in range(n)]
        pg.allgather([all_dims], [mine]).wait()
        dims = torch.stack(all_dims).cpu().tolist()  # dims[rank][tensor]
        works, padded = [], []
        for i, a in enumerate(ins):
            rows = max(d[i] for d in dims)
            src = a
            if a.shape[0] != rows:
                src = torch.zeros((rows,) + tuple(a.shape[1:]), dtype=a.dtype, device=a.device)
                src[: a.shape[0]] = a
            pieces = [torch.empty_like(src) for _ in range(n)]
            works.append(pg.allgather([pieces], [src]))
            padded.append(pieces)

        def finish() -> List[torch.Tensor]:
            return [torch.cat([p[: dims[r][i]] for r, p in enumerate(pieces)]) for i, pieces in enumerate(padded)]

        return _handle(works, keys, finish)


def broadcast(a: torch.Tensor, out: torch.Tensor, name: str, root_rank: int, process_set: ProcessSet) -> LocalHandle:
    """Copy root_rank's tensor (a global rank) into `out` on every member."""
    dist = _dist()
    if root_rank not in process_set.ranks:
        raise ValueError(f"broadcast of '{name}': root rank {root_rank} is not in process set {process_set.ranks}")
    pg = _backend(_backend_name([a]), process_set)
    with _claimed([name], process_set) as keys:
        if out is not a:
            out.copy_(a)
        opts = dist.BroadcastOptions()
        opts.rootRank = process_set.ranks.index(root_rank)
        opts.rootTensor = 0
        return _handle([pg.broadcast([out], opts)], keys, lambda: [out])


def alltoall(a: torch.Tensor, splits: List[int], name: str, process_set: ProcessSet) -> LocalHandle:
    """Send splits[j] rows to member j; wait() returns [(output, received_splits)]."""
    dist = _dist()
    n = process_set.size()
    if not splits:
        if a.shape[0] % n:
            raise ValueError(f"alltoall of '{name}': without splits, dim 0 ({a.shape[0]}) must be divisible by {n}")
        splits = [a.shape[0] // n] * n
    if len(splits) != n or min(splits) < 0 or sum(splits) != a.shape[0]:
        raise ValueError(f"alltoall of '{name}': splits {splits} must have {n} non-negative entries "
                         f"summing to dim 0 ({a.shape[0]})")
    pg = _backend(_backend_name([a]), process_set)
    with _claimed([name], process_set) as keys:
        send = torch.tensor(splits, dtype=torch.int64, device=a.device)
        recv = torch.empty_like(send)
        pg.alltoall_base(recv, send, [1] * n, [1] * n, dist.AllToAllOptions()).wait()
        received = recv.cpu().tolist()
        out = torch.empty((sum(received),) + tuple(a.shape[1:]), dtype=a.dtype, device=a.device)
        work = pg.alltoall_base(out, a, received, splits, dist.AllToAllOptions())
        return _handle([work], keys, lambda: [(out, torch.tensor(received, dtype=torch.int32))])


def reducescatter(ins: Sequence[torch.Tensor], names: Sequence[str], op: int, prescale: float, postscale: float,
                  process_set: ProcessSet) -> LocalHandle:
    """Reduce, then keep this member's rows (the first dim % size members get one more)."""
    dist = _dist()
    pg = _backend(_backend_name(ins), process_set)
    with _claimed(names, process_set) as keys:
        n, me = process_set.size(), process_set.rank()
        works, outs, kept = [], [], []
        for a in ins:
            dim0 = int(a.shape[0])
            rows = [dim0 // n + (1 if j < dim0 % n else 0) for j in range(n)]
            most = max(rows)
            padded = torch.zeros((n * most,) + tuple(a.shape[1:]), dtype=a.dtype, device=a.device)
            start = 0
            for j, r in enumerate(rows):
                padded[j * most: j * most + r] = a[start: start + r]
                start += r
            _scale(padded, prescale)
            out = torch.empty((most,) + tuple(a.shape[1:]), dtype=a.dtype, device=a.device)
            opts = dist.ReduceScatterOptions()
            opts.reduceOp = _reduce_op(op)
            works.append(pg._reduce_scatter_base(out, padded, opts))
            outs.append(out)
            kept.append(rows[me])

        def finish() -> List[torch.Tensor]:
            res = []
            for out, r in zip(outs, kept):
                o = out[:r].contiguous()
                if op == _ops.Average:
                    _divide(o, n)
                _scale(o, postscale)
                res.append(o)
            return res

        return _handle(works, keys, finish)
