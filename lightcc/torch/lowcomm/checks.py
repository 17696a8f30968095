"""DiLoCo's construction checks: arguments checked locally, then one allgather so every rank raises alike.

A bad argument found on one rank alone must not leave the others waiting in a collective, so no
check raises before the agreement: each rank records its own problem (or None) and a signature
(each trainable parameter's name, shape and dtype, plus the settings that shape the exchanges),
one `allgather_object` shares them, and then every rank raises the same ValueError, naming the
rank and the parameter, or none does.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import torch

from lightcc.common.basics import rank
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.torch.functions import allgather_object

Signature = Tuple[Tuple[Any, ...], List[Tuple[str, Tuple[int, ...], str]]]


def trainable(model: Any) -> List[Tuple[str, torch.nn.Parameter]]:
    """The model's (name, parameter) pairs that require a gradient, in named_parameters order."""
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, not {type(model).__name__}")
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not named:
        raise ValueError("the model has no parameter that requires a gradient")
    return named


def check_optimizer(named: Sequence[Tuple[str, torch.nn.Parameter]], optimizer: Any) -> None:
    """The inner optimizer must own exactly the model's trainable parameters."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise ValueError(f"inner_optimizer must be a torch.optim.Optimizer, not {type(optimizer).__name__}")
    owned = {id(p) for g in optimizer.param_groups for p in g["params"]}
    for name, p in named:
        if id(p) not in owned:
            raise ValueError(f"the inner optimizer does not own parameter {name!r} of the model")
    mine = {id(p) for _, p in named}
    for i, g in enumerate(optimizer.param_groups):
        for p in g["params"]:
            if id(p) not in mine:
                raise ValueError(f"the inner optimizer's group {i} holds a tensor of shape {list(p.shape)} that is not "
                                 f"a trainable parameter of the model")


def check_settings(sync_every: Any, delay: int, mix: float, fragment_count: int) -> None:
    """sync_every >= 1, fragments <= sync_every, 0 <= delay < sync_every, 0 <= mix <= 1."""
    if isinstance(sync_every, bool) or not isinstance(sync_every, int) or sync_every < 1:
        raise ValueError(f"sync_every must be an int >= 1 (inner steps between outer steps), got {sync_every!r}")
    if fragment_count > sync_every:
        raise ValueError(f"{fragment_count} fragments need sync_every >= {fragment_count} (one fragment syncs per "
                         f"step at most), got sync_every={sync_every}")
    if isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay < sync_every:
        raise ValueError(f"delay must be an int in [0, sync_every={sync_every}), got {delay!r}")
    if not 0.0 <= float(mix) <= 1.0:
        raise ValueError(f"mix must be in [0, 1], got {mix!r}")


def default_delay(fragment_count: int, sync_every: Any) -> int:
    """τ when the user gives none: 0 with one fragment (DiLoCo), else 2 (1 where H = 2 leaves no room).

    Two inner steps rather than one, because one did not hide the exchange where the ranks fill the
    cores: the engine's thread then competes with the very step it should overlap (docs/lowcomm.md,
    "At 100 Mbit/s over 2000 steps"). A bad sync_every is left to check_settings to name.
    """
    if fragment_count == 1:
        return 0
    return 2 if isinstance(sync_every, int) and sync_every > 2 else 1


def check_warmup(warmup_steps: Any) -> None:
    """warmup_steps is an int >= 0."""
    if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or warmup_steps < 0:
        raise ValueError(f"warmup_steps must be an int >= 0 (data-parallel steps before DiLoCo's), "
                         f"got {warmup_steps!r}")


# The settings of a signature, in order (DiLoCo._settings).
LABELS = ("sync_every", "delay", "mix", "compression", "fragments", "warmup_steps", "islands")


def mismatch(r: int, mine: Signature, theirs: Signature) -> Optional[str]:
    """How rank r's signature differs from the reference one (said as rank 0's), or None."""
    return _mismatch(r, mine, theirs, LABELS)


def signature(settings: Tuple[Any, ...], named: Sequence[Tuple[str, torch.Tensor]]) -> Signature:
    """What must match on every rank: the exchange settings and each trainable parameter's name, shape, dtype."""
    return settings, [(n, tuple(p.shape), str(p.dtype).replace("torch.", "")) for n, p in named]


def _mismatch(r: int, mine: Signature, theirs: Signature, labels: Sequence[str], first: int = 0) -> Optional[str]:
    """How rank r's signature differs from rank `first`'s, or None."""
    (s0, p0), (sr, pr) = mine, theirs
    for label, a, b in zip(labels, s0, sr):
        if a != b:
            return f"{label} is {a!r} on rank {first} but {b!r} on rank {r}"
    for (n0, shape0, dt0), (nr, shaper, dtr) in zip(p0, pr):
        if n0 != nr:
            return f"parameter {n0!r} of rank {first} is {nr!r} on rank {r} (the models differ)"
        if (shape0, dt0) != (shaper, dtr):
            return f"parameter {n0!r} is {dt0} {list(shape0)} on rank {first} but {dtr} {list(shaper)} on rank {r}"
    if len(p0) != len(pr):
        return f"the model has {len(p0)} trainable parameters on rank {first} but {len(pr)} on rank {r}"
    return None


def agree(problem: Optional[str], sig: Optional[Signature], labels: Sequence[str], name: str,
          job: ProcessSet = global_process_set) -> None:
    """Share the problem and signature of every rank of `job`; raise the same ValueError on each if any is wrong.

    Ranks are named by their global rank, also when `job` is a process set.
    """
    everyone = allgather_object((problem, sig), name=f"{name}.signature", process_set=job)
    me, ranks = rank(), job.ranks
    for i, (p, _) in enumerate(everyone):
        if p is not None:
            raise ValueError(f"lightcc DiLoCo on rank {me}: rank {ranks[i]}: {p}")
    for i in range(1, len(everyone)):
        diff = _mismatch(ranks[i], everyone[0][1], everyone[i][1], labels, first=ranks[0])
        if diff is not None:
            raise ValueError(f"lightcc DiLoCo on rank {me}: {diff}")
