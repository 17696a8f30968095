"""Horovod's ``torch.elastic``: run, TorchState and ElasticSampler over lightcc's in-place recovery.

TorchState keeps the script's own objects: `state.model`, `state.optimizer` and any module,
optimizer or ElasticSampler passed as a keyword are the very objects the script holds, saved by
value at commit and restored in place; other keywords are plain picklable attributes.
"""
from __future__ import annotations

import copy
import math
import random
from typing import Any, Callable, Dict, Iterator, List, Optional, Set

import torch

from lightcc.common.basics import init, is_initialized, rank, shutdown, size
from lightcc.common.elastic import ObjectState, run_fn


def _reset() -> None:
    shutdown()
    init()


def run(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate `func(state, ...)` to survive failures and host changes (see lightcc.common.elastic).

    Under lightccrun's elastic driver a failed collective rolls the state back to its last commit,
    the engine is rebuilt for the new set of workers in this same process, and `func` runs again.
    """
    return run_fn(func, _reset)


class _Handler:
    """Saves one object of the script by value and puts it back in place."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.save()

    def save(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement save")

    def restore(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement restore")

    def sync(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement sync")

    def reset(self) -> None:
        """The world changed (new rank and size)."""


class _ModuleHandler(_Handler):
    def save(self) -> None:
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self) -> None:
        self.value.load_state_dict(self._saved)

    def sync(self) -> None:
        from lightcc.torch.functions import broadcast_parameters

        broadcast_parameters(self.value.state_dict(), root_rank=0)


class _OptimizerHandler(_Handler):
    def __init__(self, value: torch.optim.Optimizer, model: Optional[torch.nn.Module]) -> None:
        self._model = model
        super().__init__(value)

    def save(self) -> None:
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self) -> None:
        self._drop_pending()
        self.value.load_state_dict(self._saved)

    def sync(self) -> None:
        from lightcc.torch.functions import broadcast_optimizer_state

        broadcast_optimizer_state(self.value, root_rank=0, model=self._model)

    def _drop_pending(self) -> None:
        """A DistributedOptimizer whose step failed may hold handles of the dead engine: forget them."""
        handles = getattr(self.value, "_handles", None)
        if isinstance(handles, dict) and handles:
            handles.clear()
            delay = getattr(self.value, "_allreduce_delay", {})
            for p in delay:
                delay[p] = self.value.backward_passes_per_step
            counts = getattr(self.value, "_group_counts", None)
            if isinstance(counts, dict):
                for key in counts:
                    counts[key] = 0
        if hasattr(self.value, "_synchronized"):
            self.value._synchronized = False


class _SamplerHandler(_Handler):
    def save(self) -> None:
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self) -> None:
        self.value.load_state_dict(copy.deepcopy(self._saved))

    def sync(self) -> None:
        """Every rank's processed samples count (they were disjoint shares); rank 0's epoch."""
        from lightcc.torch.functions import allgather_object, broadcast_object

        mine = self.value.state_dict()
        processed: Set[int] = set()
        for part in allgather_object(sorted(mine["processed_indices"]), name="elastic.sampler.processed"):
            processed.update(part)
        epoch = broadcast_object(mine["epoch"], root_rank=0, name="elastic.sampler.epoch")
        self.value.load_state_dict({"epoch": epoch, "processed_indices": processed})
        self.save()

    def reset(self) -> None:
        self.value.reset()


class TorchState(ObjectState):
    """A model's and an optimizer's state plus any picklable attributes, committed and restored together."""

    def __init__(self, model: Optional[torch.nn.Module] = None, optimizer: Optional[torch.optim.Optimizer] = None,
                 **kwargs: Any) -> None:
        from lightcc.torch.functions import broadcast_object

        self._handlers: Dict[str, _Handler] = {}
        plain: Dict[str, Any] = {}
        for name, value in [("model", model), ("optimizer", optimizer), *kwargs.items()]:
            if isinstance(value, torch.nn.Module):
                self._handlers[name] = _ModuleHandler(value)
            elif isinstance(value, torch.optim.Optimizer):
                self._handlers[name] = _OptimizerHandler(value, model)
            elif isinstance(value, ElasticSampler):
                self._handlers[name] = _SamplerHandler(value)
            elif name in ("model", "optimizer") and value is None:
                pass
            else:
                plain[name] = value
                continue
            setattr(self, name, value)
        self.model = model
        self.optimizer = optimizer
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **plain)

    def save(self) -> None:
        for h in self._handlers.values():
            h.save()
        super().save()

    def restore(self) -> None:
        for h in self._handlers.values():
            h.restore()
        super().restore()

    def sync(self) -> None:
        for h in self._handlers.values():
            h.sync()
        super().sync()
        for h in self._handlers.values():
            h.save()

    def reset(self) -> None:
        for h in self._handlers.values():
            h.reset()


class ElasticSampler(torch.utils.data.Sampler):
    """Shards a dataset across ranks and skips samples already processed this epoch.

    Record progress with record_batch/record_indices; TorchState commits the epoch and the
    processed indices, and after the job re-forms the unprocessed rest is re-sharded over the new
    set of ranks.
    """

    def __init__(self, dataset: Any, shuffle: bool = True, seed: int = 0) -> None:
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_indices: Set[int] = set()
        self.indices: List[int] = []
        self.num_samples = 0
        self.reset()

    def set_epoch(self, epoch: int) -> None:
        """Start a new epoch: nothing is processed yet, and the shuffle changes with the epoch."""
        self.epoch = epoch
        self.processed_indices = set()
        self.reset()

    def get_indices(self, batch_idx: int, batch_size: int) -> List[int]:
        """This rank's dataset indices of batch `batch_idx`."""
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def record_batch(self, batch_idx: int, batch_size: int) -> None:
        """Mark this rank's batch `batch_idx` as processed."""
        self.record_indices(self.get_indices(batch_idx, batch_size))

    def record_indices(self, indices: Any) -> None:
        """Mark dataset indices as processed."""
        self.processed_indices.update(int(i) for i in indices)

    def state_dict(self) -> Dict[str, Any]:
        return {"epoch": self.epoch, "processed_indices": set(self.processed_indices)}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.epoch = state["epoch"]
        self.processed_indices = set(state["processed_indices"])
        self.reset()

    def reset(self) -> None:
        """Re-shard the unprocessed samples over the current ranks (padded to equal shares).

        Between generations (no engine) the shares are left as they are; the next sync re-shards.
        """
        if not is_initialized():
            return
        n, me = size(), rank()
        remaining = [i for i in range(len(self.dataset)) if i not in self.processed_indices]
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(remaining)
        self.num_samples = math.ceil(len(remaining) / n) if remaining else 0
        total = self.num_samples * n
        padded = (remaining * math.ceil(total / len(remaining)))[:total] if remaining else []
        self.indices = padded[me:total:n]

    def __iter__(self) -> Iterator[int]:
        return iter(list(self.indices))

    def __len__(self) -> int:
        return self.num_samples
