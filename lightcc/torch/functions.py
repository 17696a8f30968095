"""Helpers built on the collectives: broadcast parameters, optimizer state and Python objects."""
from __future__ import annotations

import pickle
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple, Union

import torch

from lightcc.common.basics import rank
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.torch import mpi_ops as M

try:  # cloudpickle also carries lambdas and local classes; plain pickle is the fallback
    import cloudpickle as _pickler
except ImportError:  # pragma: no cover - depends on the environment
    _pickler = pickle

Params = Union[Dict[str, torch.Tensor], Iterable[Union[torch.Tensor, Tuple[Optional[str], torch.Tensor]]]]


def broadcast_parameters(params: Params, root_rank: int,
                         process_set: ProcessSet = global_process_set) -> None:
    """Overwrite every rank's tensors with root_rank's, in place.

    `params` is a state_dict-like mapping (broadcast in sorted key order) or a list of tensors or
    of (name, tensor) pairs, e.g. `model.named_parameters()`. Every rank must pass the same
    structure. Non-tensor entries of a mapping are left alone.
    """
    if isinstance(params, dict):
        items: List[Tuple[Optional[str], torch.Tensor]] = [(k, v) for k, v in sorted(params.items())
                                                           if isinstance(v, torch.Tensor)]
    elif isinstance(params, (list, tuple)) or hasattr(params, "__iter__"):
        items = [p if isinstance(p, tuple) else (None, p) for p in params]
    else:
        raise ValueError(f"broadcast_parameters expects a dict or a list, got {type(params).__name__}")
    handles = []
    for name, p in items:
        data = p.data if isinstance(p, torch.nn.Parameter) else p
        handles.append(M.broadcast_async_(data, root_rank, name=f"parameter.{name}" if name else None,
                                          process_set=process_set))
    for h in handles:
        M.synchronize(h)


def _base_step(optimizer: torch.optim.Optimizer) -> Any:
    # A DistributedOptimizer's own step would wait for gradient allreduces that never started.
    return getattr(optimizer, "_lightcc_base_step", optimizer.step)


def _sparse_params(optimizer: torch.optim.Optimizer, model: Optional[torch.nn.Module]) -> Set[int]:
    """Ids of the parameters whose gradients are sparse: all of SparseAdam's, a sparse Embedding's."""
    if isinstance(optimizer, torch.optim.SparseAdam):
        return {id(p) for g in optimizer.param_groups for p in g["params"]}
    if model is None:
        return set()
    return {id(p) for m in model.modules() if isinstance(m, torch.nn.Embedding) and m.sparse
            for p in m.parameters()}


def _materialise_state(optimizer: torch.optim.Optimizer, model: Optional[torch.nn.Module]) -> None:
    """Give a fresh optimizer its state tensors by one step on zero gradients, leaving params as they were.

    As in Horovod, a parameter that requires a gradient and had none keeps the zero gradient (code
    written for Horovod reads `p.grad` right after); a gradient it had is put back.
    """
    params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
    sparse = _sparse_params(optimizer, model)
    saved = [(p.detach().clone(), p.grad) for p in params]
    for p in params:
        zero = torch.zeros_like(p)
        p.grad = zero.to_sparse() if id(p) in sparse else zero
    try:
        _base_step(optimizer)()
    finally:
        with torch.no_grad():
            for p, (data, grad) in zip(params, saved):
                p.copy_(data)
                if grad is not None:
                    p.grad = grad


def broadcast_optimizer_state(optimizer: torch.optim.Optimizer, root_rank: int,
                              model: Optional[torch.nn.Module] = None) -> None:
    """Make every rank's optimizer state (hyper-parameters and per-parameter state) root_rank's.

    A fresh optimizer first gets its state by one step on zero gradients (parameters are left
    unchanged; those that had no gradient keep the zero one, as in Horovod). Tensors are broadcast
    in place; hyper-parameters and non-tensor state travel as one pickled object. With `model`,
    state tensors are named after its parameter names and a sparse Embedding's gradients are sparse.
    """
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state (its state is nested and holds None)")
    if len(optimizer.state) == 0:
        _materialise_state(optimizer, model)
    names = {id(p): n for n, p in model.named_parameters()} if model is not None else {}
    params = [p for g in optimizer.param_groups for p in g["params"]]
    options = [{k: v for k, v in g.items() if k != "params"} for g in optimizer.param_groups]
    scalars = {(i, key): v for i, p in enumerate(params) for key, v in optimizer.state.get(p, {}).items()
               if not torch.is_tensor(v)}
    root_options, root_scalars = broadcast_object((options, scalars), root_rank, name="optimizer_state.options")
    if len(root_options) != len(optimizer.param_groups):
        raise ValueError(f"rank {root_rank}'s optimizer has {len(root_options)} parameter groups, this rank's has "
                         f"{len(optimizer.param_groups)}")
    for group, opts in zip(optimizer.param_groups, root_options):
        group.update(opts)
    for (i, key), value in root_scalars.items():
        optimizer.state[params[i]][key] = value
    handles = []
    for i, p in enumerate(params):
        state = optimizer.state.get(p, {})
        for key in sorted(state):
            if torch.is_tensor(state[key]):
                label = names.get(id(p), str(i))
                handles.append(M.broadcast_async_(state[key], root_rank, name=f"optimizer_state.{label}.{key}"))
    for h in handles:
        M.synchronize(h)


def broadcast_object(obj: Any, root_rank: int = 0, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> Any:
    """Pickle `obj` on root_rank and return the unpickled copy on every rank."""
    name = name or type(obj).__name__
    if rank() == root_rank:
        payload = torch.frombuffer(bytearray(_pickler.dumps(obj)), dtype=torch.uint8)
    else:
        payload = torch.zeros(0, dtype=torch.uint8)
    length = M.broadcast_(torch.tensor([payload.numel()], dtype=torch.int64), root_rank, f"{name}.sz", process_set)
    if rank() != root_rank:
        payload = torch.empty(int(length[0]), dtype=torch.uint8)
    M.broadcast_(payload, root_rank, f"{name}.t", process_set)
    return pickle.loads(payload.numpy().tobytes())


def allgather_object(obj: Any, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> List[Any]:
    """Pickle `obj` on every rank and return everyone's objects in rank order."""
    name = name or type(obj).__name__
    payload = torch.frombuffer(bytearray(_pickler.dumps(obj)), dtype=torch.uint8)
    sizes = M.synchronize(M.allgather_async(torch.tensor([payload.numel()], dtype=torch.int64), f"{name}.sz",
                                            process_set))
    data = M.synchronize(M.allgather_async(payload, f"{name}.t", process_set)).numpy().tobytes()
    out, off = [], 0
    for n in sizes.tolist():
        out.append(pickle.loads(data[off:off + n]))
        off += n
    return out
