"""DDP communication hooks over lightcc's engine: dense, fp16, bf16 and DGC top-k allreduce of DDP's buckets.

``ddp_model.register_comm_hook(state, hook)`` with a hook from here sends each gradient bucket
through lightcc's engine instead of DDP's process group, so DDP over ``gloo``, ``nccl`` or
``lightcc`` gets the engine's algorithms: the 2D hierarchical allreduce (chosen by the engine on
2+ hosts of 2+ ranks where its cost model says it pays; ``LIGHT_2D_ALLREDUCE`` forces it either way),
fp16/bf16 on the wire, and top-k with DGC's recipe (docs/topk.md). Every hook returns a torch
future that lightcc's completion thread completes (lightcc/torch/futures.py): no thread per
bucket, no polling.

Names. The engine matches tensors across ranks by name, caches negotiations by name and keeps
top-k state (residuals, velocities) by name, so names are identical on every rank and stable
across steps: ``<state prefix>.b<bucket index>`` plus the bucket's element count for the flat
hooks (DDP rebuilds its buckets once after the first step; a rebuilt bucket gets a new name
rather than a stale cache entry), and for top-k one name per parameter, fixed when the
parameter is first seen (step 1, whose bucket layout DDP builds alike on every rank).

Engine. A state starts lightcc's engine if nothing has (DDP over gloo or nccl): through torch's
default store, with the default group's rank and size, as the ``lightcc`` backend does. If
lightcc already runs (``dist.init_process_group("lightcc")`` or ``lightcc.torch.init()``) it
must place the ranks as torch's group does.
"""
from __future__ import annotations

import itertools
import os
from datetime import timedelta
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
import torch

from lightcc.common import op_args as _build
from lightcc.common import ops as _ops
from lightcc.common.native import core
from lightcc.torch import backward_hold
from lightcc.torch import tensors as _t
from lightcc.torch.topk_training import sgd_step_corrected

__all__ = ["LightccState", "TopkState", "allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "topk_hook"]

_prefixes = itertools.count()
_STORE_PREFIX = "lightcc/ddp_hooks/"


def _world(process_group: Any) -> Tuple[int, int]:
    """(rank, size) of the hook's group, which must be the whole job (lightcc's process set 0)."""
    import torch.distributed as dist

    if not dist.is_initialized():
        raise RuntimeError("lightcc DDP hooks: torch.distributed is not initialized; call "
                           "dist.init_process_group(...) and build DDP before registering the hook")
    group = process_group if process_group is not None else dist.group.WORLD
    size, world = dist.get_world_size(group), dist.get_world_size()
    if size != world:
        raise ValueError(f"lightcc DDP hooks run on the whole job (lightcc's global process set); the given "
                         f"process group has {size} of {world} ranks")
    return dist.get_rank(), world


def ensure_engine(process_group: Any = None, flag_defaults: Optional[Mapping[str, str]] = None) -> None:
    """Start lightcc's engine for DDP's group unless it runs already (then check it places ranks alike).

    `flag_defaults` (flag -> text) apply only when this call starts the engine and only to flags
    the environment leaves unset.
    """
    import torch.distributed as dist

    from lightcc.torch.c10d import meeting

    rank, size = _world(process_group)
    store = dist.PrefixStore(_STORE_PREFIX, dist.distributed_c10d._get_default_store())  # noqa: SLF001
    meeting.join_or_start(store, rank, size, _group_timeout(), "lightcc DDP hooks", flag_defaults=flag_defaults)


def _group_timeout() -> timedelta:
    """The default group's timeout (it becomes LIGHTCC_TIMEOUT's default), or torch's default."""
    import torch.distributed as dist

    try:
        return dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu")).options._timeout  # noqa: SLF001
    except Exception:  # noqa: BLE001  (private API: any torch that lacks it gets torch's default)
        return dist.distributed_c10d.default_pg_timeout


class LightccState:
    """State of the dense, fp16 and bf16 hooks: the group and the prefix of the bucket names.

    Picklable (the group and the engine are not part of it). Build one per DDP model, in the
    same order on every rank (the default prefix counts states), or give `prefix`.
    """

    def __init__(self, process_group: Any = None, prefix: Optional[str] = None) -> None:
        self.process_group = process_group
        self.prefix = prefix if prefix is not None else f"ddp{next(_prefixes)}"
        self._started = False
        self._own_engine = False
        self._size = 0

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state.update(process_group=None, _started=False, _size=0)
        return state

    def _flag_defaults(self) -> Dict[str, str]:
        return {}

    def start(self) -> None:
        """Start (or join) lightcc's engine; the first hook call does this itself."""
        if not self._started:
            from lightcc.common import basics

            self._own_engine = not basics.is_initialized()
            ensure_engine(self.process_group, self._flag_defaults())
            self._size = core().size()
            self._started = True

    def name(self, bucket: Any, suffix: str = "") -> str:
        return _ops.tensor_name("allreduce", f"{self.prefix}.b{bucket.index()}.n{bucket.buffer().numel()}{suffix}")


def _submit(wire: List[torch.Tensor], names: List[str], op: int, prescale: float, shapes: Optional[List[Any]],
            keepalive: Any, finish: Any) -> torch.futures.Future:
    """Allreduce `wire` in place as one engine submission; the future's value is `finish()`."""
    args = [_build.allreduce(_t.adapt(w, n, _t.ptr(w), list(shapes[i] if shapes is not None else w.shape)), op,
                             prescale, 1.0, 0) for i, (w, n) in enumerate(zip(wire, names))]
    hold = not any(_t.is_device(w) for w in wire)
    return backward_hold.launch(args, keepalive, lambda _: finish(), hold).future


def allreduce_hook(state: LightccState, bucket: Any) -> torch.futures.Future:
    """Average the bucket with lightcc's engine allreduce (2D hierarchical where the engine chooses it)."""
    state.start()
    buf = bucket.buffer()
    return _submit([buf], [state.name(bucket)], _ops.Average, 1.0, None, buf, lambda: buf)


def _cast_hook(state: LightccState, bucket: Any, dtype: torch.dtype) -> torch.futures.Future:
    state.start()
    buf = bucket.buffer()
    wire = buf.to(dtype)
    # Divide before summing, as torch's fp16 hook does: the sum of raw gradients may overflow fp16.

    def finish() -> torch.Tensor:
        buf.copy_(wire)
        return buf

    return _submit([wire], [state.name(bucket, "." + str(dtype).split(".")[-1])], _ops.Sum, 1.0 / state._size,
                   None, (buf, wire), finish)


def fp16_compress_hook(state: LightccState, bucket: Any) -> torch.futures.Future:
    """Average the bucket as float16 on the wire (half the bytes), back to the bucket's dtype after."""
    return _cast_hook(state, bucket, torch.float16)


def bf16_compress_hook(state: LightccState, bucket: Any) -> torch.futures.Future:
    """Average the bucket as bfloat16 on the wire (half the bytes, float32's range)."""
    return _cast_hook(state, bucket, torch.bfloat16)


# ---- top-k -------------------------------------------------------------------------------------

class TopkState(LightccState):
    """State of `topk_hook`: DGC top-k of each parameter's gradient at `ratio`, by lightcc's engine.

    The engine compresses float32 gradients of at least ``LIGHT_TOPK_THRESHOLD`` bytes and
    ``LIGHT_TOPK_MIN_DIMS`` dimensions (biases and norms stay dense) with error feedback,
    warm-up and local clipping (docs/topk.md); the rest of the bucket is averaged dense in the
    same submission. Top-k and its density are engine-wide: when this state starts the engine
    (DDP over gloo or nccl) it sets ``LIGHT_TOPK_ALLREDUCE=1`` and ``LIGHT_TOPK_DENSITY=ratio``
    unless the environment sets them; an engine already running (the ``lightcc`` backend) must
    have been started with them, or the first step raises.

    Momentum correction (DGC): the hook cannot see the optimizer. Either

    - ``state.declare_optimizer(opt)`` (torch.optim.SGD): the engine accumulates each compressed
      gradient's momentum before selection with the optimizer's momentum and Nesterov flag
      (re-read every step), and the optimizer steps those parameters as plain SGD by the result
      (weight decay scaled by 1/(1 - momentum), its lr at that step), keeping its own momentum
      for the dense ones; or
    - ``TopkState(momentum=m, nesterov=...)`` with an optimizer *without* momentum: the engine
      applies m to the compressed gradients, nothing to the dense ones.

    Without either the optimizer's momentum runs after compression on the sparse result (plain
    error feedback): it trains, a little worse (docs/topk.md: -0.28 points at 0.1 % on digits).

    Picklable with its error-feedback residuals and velocities (`pickle.dumps(state)` or
    `state.state_dict()`; per rank: they differ between ranks). A restored state puts them back
    into the engine on its first step.
    """

    def __init__(self, process_group: Any = None, ratio: float = 0.01, momentum: float = 0.0, nesterov: bool = False,
                 prefix: Optional[str] = None) -> None:
        super().__init__(process_group, prefix)
        if not 0.0 < ratio <= 1.0:
            raise ValueError(f"TopkState: ratio must be in (0, 1], got {ratio}")
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"TopkState: momentum must be in [0, 1), got {momentum}")
        self.ratio, self.momentum, self.nesterov = float(ratio), float(momentum), bool(nesterov)
        self._names: Dict[int, str] = {}  # id(parameter) -> engine name, fixed at first sight
        self._params: Dict[str, torch.Tensor] = {}
        self._pending: Dict[str, np.ndarray] = {}  # restored residuals and velocities, set at the first step
        self._optimizer: Optional[torch.optim.Optimizer] = None
        self._declared: Dict[str, Tuple[bool, float, bool]] = {}
        self._seen_steps: Dict[str, int] = {}
        self._hidden: List[Tuple[torch.Tensor, Optional[torch.Tensor]]] = []
        self._hooks: List[Any] = []

    def _flag_defaults(self) -> Dict[str, str]:
        return {"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_DENSITY": repr(self.ratio)}

    def start(self) -> None:
        if self._started:
            return
        super().start()
        on = core().fusion_info().get("topk_threshold_bytes") is not None
        # The core does not report its density: the environment it started from (or this state's
        # default, when this state started it) is what it read.
        density = float(os.environ.get("LIGHT_TOPK_DENSITY", repr(self.ratio) if self._own_engine else "0.01"))
        if not on or abs(density - self.ratio) > 1e-12:
            self._started = False
            raise RuntimeError(f"lightcc topk_hook on rank {core().rank()}: the engine runs with top-k "
                               f"{'on at density ' + str(density) if on else 'off'}, the state asks for ratio "
                               f"{self.ratio}; top-k is engine-wide: start lightcc with LIGHT_TOPK_ALLREDUCE=1 "
                               f"LIGHT_TOPK_DENSITY={self.ratio} in the environment")
        for name, values in self._pending.items():
            core().set_topk_residual(name, np.ascontiguousarray(values, dtype=np.float32).reshape(-1))
        self._pending = {}

    # ---- pickling and checkpoints ----------------------------------------------------------

    def _mine(self, key: str) -> bool:
        base = key[len("velocity:"):] if key.startswith("velocity:") else key
        return base.startswith(_ops.tensor_name("allreduce", self.prefix + "."))

    def state_dict(self) -> Dict[str, Any]:
        """This rank's hook state: settings plus the residuals and velocities of its tensors (float32 copies)."""
        residuals = dict(self._pending)
        if self._started:
            residuals.update({k: np.frombuffer(v, dtype=np.float32).copy()
                              for k, v in core().topk_residuals().items() if self._mine(k)})
        return {"prefix": self.prefix, "ratio": self.ratio, "momentum": self.momentum, "nesterov": self.nesterov,
                "residuals": residuals}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore `state_dict()`'s output (this rank's own); the residuals reach the engine at the next step."""
        self.prefix, self.ratio = str(state["prefix"]), float(state["ratio"])
        self.momentum, self.nesterov = float(state["momentum"]), bool(state["nesterov"])
        self._pending = {str(k): np.asarray(v, dtype=np.float32).copy() for k, v in state["residuals"].items()}
        if self._started:
            for name, values in self._pending.items():
                core().set_topk_residual(name, values.reshape(-1))
            self._pending = {}

    def __getstate__(self) -> Dict[str, Any]:
        return self.state_dict()

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.__init__(None, float(state["ratio"]), float(state["momentum"]), bool(state["nesterov"]),
                      str(state["prefix"]))
        self.load_state_dict(state)

    # ---- momentum correction ---------------------------------------------------------------

    def declare_optimizer(self, optimizer: torch.optim.Optimizer) -> "TopkState":
        """Let DGC's momentum correction use `optimizer`'s momentum (torch.optim.SGD; see the class docstring).

        Installs step pre/post hooks on the optimizer: compressed parameters whose result already
        carries the momentum are stepped as plain SGD and hidden from the optimizer's own step.
        Other optimizers get plain error feedback and step as usual. Returns the state.
        """
        if self._optimizer is not None:
            raise ValueError("TopkState.declare_optimizer: an optimizer is declared already")
        self._optimizer = optimizer
        self._group_of = {id(p): g for g in optimizer.param_groups for p in g["params"]}
        self._hooks = [optimizer.register_step_pre_hook(lambda *_: self._before_step()),
                       optimizer.register_step_post_hook(lambda *_: self._after_step())]
        return self

    def _wanted(self, p: torch.Tensor) -> Tuple[bool, float, bool]:
        if self._optimizer is not None:
            group = self._group_of.get(id(p))
            if group is None or not isinstance(self._optimizer, torch.optim.SGD):
                return (False, 0.0, False)
            return (True, float(group.get("momentum", 0.0) or 0.0), bool(group.get("nesterov", False)))
        if self.momentum > 0.0:
            return (True, self.momentum, self.nesterov)
        return (False, 0.0, False)

    def _declare(self, name: str, p: torch.Tensor) -> None:
        want = self._wanted(p)
        if self._declared.get(name) != want:
            core().topk_declare(0, name, *want)
            self._declared[name] = want

    def names_for(self, bucket: Any) -> List[str]:
        """One engine name per parameter of the bucket, fixed at the parameter's first sight."""
        out = []
        for j, p in enumerate(bucket.parameters()):
            name = self._names.get(id(p))
            if name is None:
                name = _ops.tensor_name("allreduce", f"{self.prefix}.b{bucket.index()}.{j}")
                self._names[id(p)] = name
                self._params[name] = p
            self._declare(name, p)
            out.append(name)
        return out

    @torch.no_grad()
    def _before_step(self) -> None:
        if not self._started:
            return
        opt = self._optimizer
        for name, p in self._params.items():
            if p.grad is None:
                continue
            steps, momentum, _ = core().topk_progress(0, name)
            if steps == self._seen_steps.get(name, 0):
                continue  # no top-k step since the last look: this tensor went dense
            self._seen_steps[name] = steps
            if momentum <= 0.0 or opt is None:
                continue
            sgd_step_corrected(p, self._group_of[id(p)], float(momentum))
            self._hidden.append((p, p.grad))
            p.grad = None

    def _after_step(self) -> None:
        for p, g in self._hidden:
            p.grad = g
        self._hidden = []
        for name, p in self._params.items():  # a scheduler may have changed a group's momentum
            self._declare(name, p)


def _views(bucket: Any) -> Tuple[torch.Tensor, List[torch.Tensor]]:
    """The bucket's flat buffer and each parameter's gradient as a view of it, in the parameter's shape."""
    buf = bucket.buffer()
    views, offset = [], 0
    for p, grad in zip(bucket.parameters(), bucket.gradients()):
        n = p.numel()
        view = buf.narrow(0, offset, n).view(p.shape)
        if grad.data_ptr() != view.data_ptr():  # DDP lays a bucket out in its parameters' order
            raise RuntimeError(f"lightcc topk_hook: bucket {bucket.index()}'s gradient {len(views)} is not at offset "
                               f"{offset} of its buffer; this DDP lays buckets out differently")
        views.append(view)
        offset += n
    if offset != buf.numel():
        raise RuntimeError(f"lightcc topk_hook: bucket {bucket.index()} holds {buf.numel()} elements, its parameters "
                           f"{offset}; a bucket mixing dtypes or padded is not supported")
    return buf, views


def topk_hook(state: TopkState, bucket: Any) -> torch.futures.Future:
    """Average the bucket with lightcc's top-k: each big multi-dimensional gradient sparsified (DGC), the rest dense."""
    state.start()
    buf, views = _views(bucket)
    names = state.names_for(bucket)
    return _submit(views, names, _ops.Average, 1.0, None, (buf, views), lambda: buf)


def _annotate(*hooks: Any) -> None:
    """DDP's register_comm_hook checks the hook's annotations by identity: give it the objects, not strings."""
    import torch.distributed as dist

    for hook in hooks:
        hook.__annotations__ = {**hook.__annotations__, "bucket": dist.GradBucket,
                                "return": torch.futures.Future[torch.Tensor]}


_annotate(allreduce_hook, fp16_compress_hook, bf16_compress_hook, topk_hook)
# DDP refuses a hook *named* bf16_compress_hook unless CUDA and NCCL 2.10+ are present (it means
# torch's own, which needs NCCL's bfloat16); lightcc's engine reduces bfloat16 anywhere.
bf16_compress_hook.__name__ = bf16_compress_hook.__qualname__ = "lightcc_bf16_compress_hook"
