"""One fragment's outer step: the shared weights, the pseudo-gradient's async exchange, the outer optimizer, the merge.

Each fragment keeps a float32 copy of its parameters as every rank last agreed on them (the
shared weights θ) and an outer optimizer over that copy. An outer step is two halves:

- `start`: Δ = θ − local weights (plus the error-feedback residual when the codec is lossy),
  encoded and handed to lightcc's engine as one async exchange; the residual keeps what the
  codec lost. Training goes on while the engine works.
- `finish(mix)`: wait for the ranks' average Δ̄, step θ by it with the outer optimizer (every rank
  computes the same θ from the same inputs), then merge: local ← mix · local + (1 − mix) · θ.
  mix = 0 is DiLoCo's restart from θ; Streaming DiLoCo keeps some of the local steps taken while
  the exchange was in flight.

With islands (islands.py) a rank encodes and exchanges only its slice of Δ, over its lane (one
rank per island), scaled by its island's weight; the island then allgathers the averaged slices.
Without islands the slice is the whole fragment and the lane the whole job.

Only the thread that calls DiLoCo.step() touches a fragment.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from lightcc.torch.lowcomm.codecs import OuterCompression
from lightcc.torch.lowcomm.islands import Islands

OuterFactory = Callable[[List[torch.Tensor]], torch.optim.Optimizer]


class FragmentExchange:
    """The outer-step state of one fragment of the model (owned by DiLoCo's calling thread)."""

    def __init__(self, params: List[Tuple[str, torch.nn.Parameter]], make_outer: OuterFactory,
                 codec: OuterCompression, name: str, islands: Islands) -> None:
        self.names = [n for n, _ in params]
        self.params = [p for _, p in params]
        self.shared = [p.detach().to(torch.float32, copy=True) for p in self.params]
        self.outer = make_outer(self.shared)
        self.codec, self.name = codec, name
        self.numel = sum(p.numel() for p in self.params)
        self.handle: Optional[int] = None
        self.inflight = False  # started and not yet waited for (a rank without a slice has no handle)
        self.arrived: Optional[torch.Tensor] = None  # an average waited for before its step (state_dict)
        self.due = 0  # the inner step after which a started exchange is finished
        self.offset = 0  # this fragment syncs after inner steps t with t % H == offset (fragments.offset)
        self.wire_bytes = 0  # bytes of the tensors this rank handed to the engine across islands, all outer steps
        self.dense_bytes = 0  # what those would have been as float32
        self.island_bytes = 0  # bytes this rank handed to its island's allgathers of the averaged slices
        self.exchanges = 0
        self.wait_s = 0.0  # time spent blocked in finish() waiting for the engine
        self.started_at = 0  # the step the last exchange started after (elastic_diloco.py)
        self.residual_before: Optional[torch.Tensor] = None  # the residual before that exchange's encoding
        self.redo = False  # dropped by a failed engine and to be started again (elastic_diloco.py)
        self.place(islands)

    def place(self, islands: Islands, keep_residual: bool = False) -> None:
        """Take this rank's slice of the fragment under `islands` (raises ValueError alike on every rank).

        With `keep_residual` (a re-formation, elastic_diloco.py) a residual whose slice is unchanged stays.
        """
        old = (getattr(self, "lo", None), getattr(self, "hi", None), getattr(self, "residual", None))
        smallest = islands.smallest_slice(self.numel)
        if smallest < 1:
            raise ValueError(f"fragment {self.names} has {self.numel} elements, fewer than the {islands.shards} "
                             f"slices its islands cut it into")
        self.codec.check(smallest)
        self.islands = islands
        self.lo, self.hi = islands.bounds(self.numel)
        device = self.params[0].device
        self.residual: Optional[torch.Tensor] = (torch.zeros(self.hi - self.lo, device=device)
                                                 if self.codec.lossy else None)
        if keep_residual and old[2] is not None and (old[0], old[1]) == (self.lo, self.hi):
            self.residual = old[2]

    @torch.no_grad()
    def start(self, due: int, at: int = 0, weight: float = 1.0) -> None:
        """Encode this rank's slice of the pseudo-gradient and start its exchange; `finish` is due after step `due`.

        `at` is the step it starts after (what `drop` is told of); `weight` scales this rank's
        pseudo-gradient before the codec (elastic_diloco.py: N / contributors when new workers add
        nothing to an exchange redone after a failure).
        """
        delta = torch.cat([(s - p.float()).reshape(-1) for s, p in zip(self.shared, self.params)])[self.lo:self.hi]
        scale = self.islands.scale * weight  # the island's weight (islands.py); 1 for islands of equal size
        if scale != 1.0:
            delta.mul_(scale)
        if self.residual is not None:
            delta.add_(self.residual, alpha=self.codec.feedback_decay)
        self.started_at, self.residual_before = at, self.residual
        if self.hi > self.lo:
            wire, decoded = self.codec.encode(delta)
            if self.residual is not None:
                self.residual = delta - decoded
            self.handle = self.codec.start(wire, self.name, process_set=self.islands.lane_set)
            self.wire_bytes += sum(w.numel() * w.element_size() for w in wire)
            self.dense_bytes += 4 * (self.hi - self.lo)
        self.inflight = True
        self.exchanges += 1
        self.due = due

    def drop(self) -> None:
        """Forget an exchange in flight on an engine that failed; the residual goes back to before it was sent.

        Whether it is started again (elastic_diloco.py) or never happens, what it would have sent is
        again in the residual, as it was.
        """
        if self.inflight:
            self.handle, self.inflight = None, False
            self.exchanges -= 1
            if self.residual is not None and self.residual_before is not None:
                self.residual = self.residual_before

    def progress(self) -> None:
        """Let an exchange of several steps (the codec's) move on without waiting."""
        if self.inflight and self.handle is not None:
            self.codec.progress(self.handle)

    @property
    def pending(self) -> bool:
        """An exchange was started and its result not applied yet (in flight, or arrived early by `wait`)."""
        return self.inflight or self.arrived is not None

    def wait(self) -> None:
        """Wait for the exchange in flight, if any, and keep its average until `finish` applies it."""
        if not self.inflight:
            return
        began = time.perf_counter()
        part = torch.zeros(0, device=self.params[0].device)
        if self.handle is not None:
            part = self.codec.finish(self.handle, self.hi - self.lo, self.islands.lane_size)
            self.wire_bytes += self.codec.extra_bytes(self.handle)
            feedback = self.codec.feedback(self.handle)
            if feedback is not None and self.residual is not None:
                first, values = feedback
                values = values[:max(0, self.residual.numel() - first)]  # the last chunk's padding
                self.residual[first:first + values.numel()] += values
        self.arrived, handed = self.islands.gather(part, self.name)
        self.island_bytes += handed
        self.wait_s += time.perf_counter() - began
        self.handle, self.inflight = None, False

    @torch.no_grad()
    def finish(self, mix: float) -> None:
        """Wait for the average pseudo-gradient, take the outer step on the shared weights, merge them in."""
        self.wait()
        if self.arrived is None:
            return
        average, self.arrived = self.arrived, None
        offset = 0
        for s in self.shared:
            s.grad = average[offset:offset + s.numel()].view_as(s)
            offset += s.numel()
        self.outer.step()
        for s, p in zip(self.shared, self.params):
            s.grad = None
            if mix == 0.0:
                p.copy_(s)
            else:
                p.copy_(p.float().mul_(mix).add_(s, alpha=1.0 - mix))

    def state_dict(self) -> Dict[str, Any]:
        """Shared weights, outer optimizer state, residual and an arrived result (waits for one in flight)."""
        self.wait()
        return {"shared": [s.detach().clone() for s in self.shared], "outer": self.outer.state_dict(),
                "residual": None if self.residual is None else self.residual.clone(),
                "arrived": None if self.arrived is None else self.arrived.clone(), "due": self.due}

    @torch.no_grad()
    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Restore `state_dict()`'s output of this rank (the fragment must hold the same parameters)."""
        for s, saved in zip(self.shared, state["shared"]):
            s.copy_(saved)
        self.outer.load_state_dict(state["outer"])
        if self.residual is not None and state["residual"] is not None:
            self.residual.copy_(state["residual"])
        self.arrived = None if state["arrived"] is None else state["arrived"].clone()
        self.due = int(state["due"])

    @torch.no_grad()
    def reset(self) -> None:
        """Take the shared weights from the local ones (after the constructor's broadcast made them rank 0's)."""
        for s, p in zip(self.shared, self.params):
            s.copy_(p)

    def check_outer(self) -> None:
        """The outer optimizer must own exactly this fragment's shared weights."""
        if not isinstance(self.outer, torch.optim.Optimizer):
            raise ValueError(f"outer_optimizer(params) must return a torch.optim.Optimizer, not "
                             f"{type(self.outer).__name__}")
        owned = [p for g in self.outer.param_groups for p in g["params"]]
        if len(owned) != len(self.shared) or {id(p) for p in owned} != {id(s) for s in self.shared}:
            raise ValueError("outer_optimizer(params) must return an optimizer over exactly the params it is given")
