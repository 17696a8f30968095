"""Horovod's ``torch.elastic.sampler``: ElasticSampler, which shards a dataset and skips what was processed."""
from __future__ import annotations

import math
import random
from typing import Any, Dict, Iterator, List, Set

import torch

from lightcc.common.basics import is_initialized, rank, size


class ElasticSampler(torch.utils.data.Sampler):
    """Shards a dataset across ranks and skips samples already processed this epoch.

    Record progress with record_batch/record_indices; TorchState commits the epoch and the
    processed indices, and after the job re-forms the unprocessed rest is re-sharded over the new
    set of ranks. Horovod 0.28.1 counts processed samples instead (`processed_num`, assuming every
    rank processed the same number); a state dict of that form is still accepted.
    """

    def __init__(self, dataset: Any, shuffle: bool = True, seed: int = 0) -> None:
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_indices: Set[int] = set()
        self.indices: List[int] = []
        self.remaining_indices: List[int] = []
        self.num_replicas = 0
        self.rank = 0
        self.num_samples = 0
        self.total_size = 0
        self.reset()

    @property
    def processed_num(self) -> int:
        """How many samples this epoch has processed (Horovod's counter)."""
        return len(self.processed_indices)

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
        if "processed_indices" in state:
            self.processed_indices = set(state["processed_indices"])
        else:  # Horovod's form: the first processed_num samples of the epoch's order are done
            self.processed_indices = set(self._order()[:int(state.get("processed_num", 0))])
        self.reset()

    def _order(self) -> List[int]:
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        return order

    def reset(self) -> None:
        """Re-shard the unprocessed samples over the current ranks (padded to equal shares).

        Between generations (no engine) the shares are left as they are; the next sync re-shards.
        """
        if not is_initialized():
            return
        n, me = size(), rank()
        remaining = [i for i in self._order() if i not in self.processed_indices]
        self.num_replicas, self.rank, self.remaining_indices = n, me, remaining
        self.num_samples = math.ceil(len(remaining) / n) if remaining else 0
        self.total_size = self.num_samples * n
        total = self.total_size
        padded = (remaining * math.ceil(total / len(remaining)))[:total] if remaining else []
        self.indices = padded[me:total:n]

    def __iter__(self) -> Iterator[int]:
        return iter(list(self.indices))

    def __len__(self) -> int:
        return self.num_samples


__all__ = ["ElasticSampler"]
