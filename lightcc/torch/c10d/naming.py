"""Engine-visible names for one process group's collectives, derived from c10d's order contract.

torch requires every member of a group to issue the group's collectives in the same order, so a
name made from the call's signature and a per-signature counter is the same on every rank
without exchanging anything. The counter wraps at `WINDOW`, so a step that repeats (a DDP
bucket, an optimizer's allreduce) reuses its names and lightcc's response cache answers it
from its bit vector instead of renegotiating; a name is reused only after the call that last
held it has completed here, so two calls in flight never share one.
"""
from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

import torch

# Calls of one signature that may be in flight at once before the next waits for the oldest.
WINDOW = 8


class Names:
    """Names for one group (`tag` tells groups apart) and the futures that still hold them."""

    def __init__(self, tag: str) -> None:
        self._tag = tag
        self._counts: Dict[Tuple[Any, ...], int] = {}
        self._holders: Dict[str, torch.futures.Future] = {}

    def take(self, op: str, tensors: Sequence[torch.Tensor], extra: Tuple[Any, ...] = (), shaped: bool = True) -> str:
        """The next name for `op` on `tensors`; waits for the call that held it to finish here.

        `shaped=False` for collectives whose shapes may differ between members (alltoall and the
        gather and scatter made of it): their names carry the dtypes only.
        """
        dims = [list(t.shape) if shaped else [] for t in tensors]
        signature = (op, extra, tuple((t.dtype, tuple(d)) for t, d in zip(tensors, dims)))
        n = self._counts.get(signature, 0)
        self._counts[signature] = n + 1
        shapes = "|".join(f"{str(t.dtype).replace('torch.', '')}{d if shaped else ''}" for t, d in zip(tensors, dims))
        extras = "".join(f".{e}" for e in extra)
        name = f"{self._tag}.{op}{extras}.{shapes}#{n % WINDOW}"
        holder = self._holders.pop(name, None)
        if holder is not None and not holder.done():
            try:
                holder.wait()
            except Exception:  # noqa: BLE001  (its own waiter sees the error; here it only frees the name)
                pass
        return name

    def hold(self, names: Sequence[str], future: torch.futures.Future) -> None:
        """`future` holds `names` until it completes."""
        for name in names:
            self._holders[name] = future

    def pending(self) -> List[torch.futures.Future]:
        """Futures of calls not yet complete here."""
        return [f for f in self._holders.values() if not f.done()]

    def forget(self) -> None:
        """Drops every holder (the group is going away)."""
        self._holders.clear()
