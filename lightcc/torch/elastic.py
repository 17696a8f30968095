"""Horovod's `torch.elastic` names for a fixed set of ranks: TorchState, ElasticSampler, run."""
from __future__ import annotations

import copy
import math
import random
from typing import Any, Callable, Dict, Iterator, List, Optional, Set

import torch

from lightcc.common.basics import init, rank, shutdown, size
from lightcc.common.elastic import ObjectState, run_fn


def _reset() -> None:
    shutdown()
    init()


def run(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate `func(state, ...)`: state is synced from rank 0 first and restored on failure.

    See lightcc.common.elastic.run_fn: lightcc keeps the set of ranks fixed, so a collective
    failure restores the last commit and re-raises instead of re-forming the job.
    """
    return run_fn(func, _reset)


class TorchState(ObjectState):
    """A model's and an optimizer's state plus any picklable attributes, committed and restored together."""

    def __init__(self, model: Optional[torch.nn.Module] = None, optimizer: Optional[torch.optim.Optimizer] = None,
                 **kwargs: Any) -> None:
        from lightcc.torch.functions import broadcast_object

        self.model = model
        self.optimizer = optimizer
        self._saved_model: Optional[Dict[str, Any]] = None
        self._saved_optimizer: Optional[Dict[str, Any]] = None
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **kwargs)
        self._save_torch()

    def _save_torch(self) -> None:
        if self.model is not None:
            self._saved_model = copy.deepcopy(self.model.state_dict())
        if self.optimizer is not None:
            self._saved_optimizer = copy.deepcopy(self.optimizer.state_dict())

    def save(self) -> None:
        self._save_torch()
        super().save()

    def restore(self) -> None:
        if self.model is not None and self._saved_model is not None:
            self.model.load_state_dict(self._saved_model)
        if self.optimizer is not None and self._saved_optimizer is not None:
            self.optimizer.load_state_dict(self._saved_optimizer)
        super().restore()

    def sync(self) -> None:
        from lightcc.torch.functions import broadcast_optimizer_state, broadcast_parameters

        if self.model is not None:
            broadcast_parameters(self.model.state_dict(), root_rank=0)
        if self.optimizer is not None:
            broadcast_optimizer_state(self.optimizer, root_rank=0, model=self.model)
        super().sync()
        self._save_torch()


class ElasticSampler(torch.utils.data.Sampler):
    """Shards a dataset across ranks and skips samples already processed this epoch.

    Record progress with record_batch/record_indices; state_dict/load_state_dict carry the
    epoch and processed indices (TorchState attributes commit them).
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
        """Re-shard the unprocessed samples over the current ranks (padded to equal shares)."""
        n, me = size(), rank()
        remaining = [i for i in range(len(self.dataset)) if i not in self.processed_indices]
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(remaining)
        self.num_samples = math.ceil(len(remaining) / n) if remaining else 0
        total = self.num_samples * n
        padded = remaining + remaining[:total - len(remaining)]
        self.indices = padded[me:total:n]

    def __iter__(self) -> Iterator[int]:
        return iter(list(self.indices))

    def __len__(self) -> int:
        return self.num_samples
