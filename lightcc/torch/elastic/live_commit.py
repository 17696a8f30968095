"""Commits that copy nothing big: the model's and optimizer's live tensors are the commit until the next step.

A script that commits right after `optimizer.step()` (forward, backward, step, commit) changes
parameters and optimizer state only in that step, and every collective of the next step runs
before it: a failed collective leaves those tensors exactly as committed. `LiveCommit` keeps such
a commit by the tensors' version counters instead of a copy, so committing costs no memory
traffic and rolling back costs nothing.

It watches for what would break that: an optimizer step followed by a collective before the next
commit (a loss averaged for logging, an evaluation, commits every N steps). Such a script keeps
copies from then on (TorchState's copy path). The first WARMUP commits copy too, and show whether
the script is of the safe kind before any commit relies on it. A failure inside the one interval
where the break is first seen finds this rank's tensors past the commit: `ahead()` says so, and
TorchState.sync takes the state from a rank that is not ahead (one that failed before its step),
or, if every rank stepped, from rank 0 one optimizer step past the commit, with a warning.

Collectives are seen through lightcc.common.ops's submit observers (every front submits there).
"""
from __future__ import annotations

import sys
import weakref
from typing import Any, Callable, Iterable, List, Optional, Tuple

import torch

from lightcc.common import ops

WARMUP = 2  # commits that copy before commits may stay live


class LiveCommit:
    """One TorchState's live-commit bookkeeping (see the module docstring)."""

    def __init__(self, wanted: Callable[[], bool] = lambda: True) -> None:
        self.enabled = True  # False: this state always copies (a collective was seen after a step)
        self.wanted = wanted  # TorchState.live_commit now: a state that copies anyway is not judged
        self.commits = 0
        self.stepped = False  # an optimizer stepped since the last commit
        self._versions: List[Tuple[torch.Tensor, int]] = []
        self._hooked: "weakref.WeakSet[torch.optim.Optimizer]" = weakref.WeakSet()
        _watching.add(self)

    @property
    def live(self) -> bool:
        """Whether the next commit may stay in the live tensors."""
        return self.enabled and self.wanted() and self.commits >= WARMUP

    def watch(self, optimizer: torch.optim.Optimizer) -> None:
        """Notes each step of `optimizer` (once per optimizer)."""
        if optimizer not in self._hooked:
            optimizer.register_step_post_hook(lambda *_: self._stepped())
            self._hooked.add(optimizer)

    def _stepped(self) -> None:
        # Only steps taken while live commits are wanted count: a state that copies anyway is not judged.
        if self.wanted():
            self.stepped = True

    def committed(self, tensors: Iterable[torch.Tensor]) -> None:
        """A commit was made; `tensors` are the ones it keeps live (none when it copied)."""
        self._versions = [(t, t._version) for t in tensors]
        self.commits += 1
        self.stepped = False

    def ahead(self) -> bool:
        """Whether a tensor the last commit kept live has been written since (this rank is past it)."""
        return any(t._version != v for t, v in self._versions)

    def on_submit(self) -> None:
        if self.stepped and self.enabled and self.wanted():
            self.enabled = False
            print("lightcc elastic: a collective ran after optimizer.step() and before commit(); commits copy the "
                  "model and optimizer state from now on (docs/elastic.md, 'What a commit costs')", file=sys.stderr)


_watching: "weakref.WeakSet[LiveCommit]" = weakref.WeakSet()


def _on_submit() -> None:
    for watcher in list(_watching):
        watcher.on_submit()


ops.SUBMIT_OBSERVERS.append(_on_submit)


def parameters(state_dict: Any) -> List[torch.Tensor]:
    """The parameters in a module's `state_dict(keep_vars=True)` (written only by an optimizer's step)."""
    return [v for v in state_dict.values() if isinstance(v, torch.nn.Parameter)]


def state_tensors(optimizer_state: Any) -> List[torch.Tensor]:
    """The tensors of an optimizer's per-parameter state (`state_dict()["state"]`)."""
    found: List[torch.Tensor] = []
    for per_param in optimizer_state.values():
        found.extend(v for v in per_param.values() if torch.is_tensor(v))
    return found


def choose_source(ahead: List[bool]) -> Tuple[int, Optional[str]]:
    """The rank to take the state from, given every rank's `ahead()`, and a warning when all are ahead."""
    for rank, is_ahead in enumerate(ahead):
        if not is_ahead:
            return rank, None
    return 0, ("every rank stepped past its last commit (a collective after optimizer.step() and before "
               "commit() failed); training goes on from rank 0's state one optimizer step past the commit")
