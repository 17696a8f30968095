"""Streaming DiLoCo's fragments: which parameters sync together, and at which inner step each fragment syncs.

A fragment is a list of the model's trainable parameters. `fragments=F` (an int) cuts the
parameters, in `model.named_parameters()` order, into F contiguous runs of about equal element
counts (a run never splits a parameter), so a fragment is a few consecutive layers, as in
Streaming DiLoCo. An explicit list of lists (of parameter names or the parameters themselves)
must name every trainable parameter exactly once.

Fragment f syncs after inner steps t with t % H == offset(f), offset(f) = ((f + 1) * H // F) % H:
the last fragment syncs at multiples of H and the others are spread evenly between, so at most
one fragment's exchange starts at any step (F <= H).
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple, Union

import torch

Named = List[Tuple[str, torch.nn.Parameter]]
FragmentSpec = Union[int, Sequence[Sequence[Union[str, torch.nn.Parameter]]]]


def offset(f: int, count: int, sync_every: int) -> int:
    """The step residue (mod sync_every) at which fragment f of `count` syncs."""
    return ((f + 1) * sync_every // count) % sync_every


def split_even(named: Named, count: int) -> List[Named]:
    """`count` contiguous runs of `named` with about equal element counts; each run non-empty."""
    if not 1 <= count <= len(named):
        raise ValueError(f"fragments={count}: the model has {len(named)} trainable parameters, so fragments must be "
                         f"between 1 and {len(named)}")
    total = sum(p.numel() for _, p in named)
    out: List[Named] = [[] for _ in range(count)]
    seen, f = 0, 0
    for i, (name, p) in enumerate(named):
        left = len(named) - i  # every later fragment still needs one parameter
        if out[f] and f + 1 < count and (seen >= total * (f + 1) / count or left <= count - 1 - f):
            f += 1
        out[f].append((name, p))
        seen += p.numel()
    return out


def from_lists(named: Named, lists: Sequence[Sequence[Union[str, torch.nn.Parameter]]]) -> List[Named]:
    """The fragments the user listed, checked: every trainable parameter exactly once, nothing else."""
    by_name = dict(named)
    name_of = {id(p): n for n, p in named}
    where: Dict[str, int] = {}
    out: List[Named] = []
    for f, members in enumerate(lists):
        if isinstance(members, (str, torch.Tensor)) or not len(members):
            raise ValueError(f"fragment {f} must be a non-empty list of parameters or parameter names")
        frag: Named = []
        for m in members:
            name = m if isinstance(m, str) else name_of.get(id(m))
            if name is None or name not in by_name:
                what = repr(m) if isinstance(m, str) else f"a tensor of shape {list(m.shape)}"
                raise ValueError(f"fragment {f} names {what}, which is not a trainable parameter of the model")
            if name in where:
                raise ValueError(f"parameter {name!r} is in fragment {where[name]} and again in fragment {f}")
            where[name] = f
            frag.append((name, by_name[name]))
        out.append(frag)
    missing = [n for n, _ in named if n not in where]
    if missing:
        raise ValueError(f"parameter {missing[0]!r} is in no fragment ({len(missing)} left out); every trainable "
                         f"parameter must be in exactly one")
    return out


def build(named: Named, spec: FragmentSpec) -> List[Named]:
    """The fragments for `spec`: an int count (contiguous, balanced) or explicit lists."""
    if isinstance(spec, bool) or not isinstance(spec, (int, list, tuple)):
        raise ValueError(f"fragments must be an int or a list of lists of parameters, not {type(spec).__name__}")
    if isinstance(spec, int):
        return split_even(named, spec)
    return from_lists(named, spec)
