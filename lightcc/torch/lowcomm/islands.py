"""DiLoCo's islands: groups of ranks training data-parallel inside, and where each rank's share of an outer step goes.

An island is a group of ranks (one host's with ``islands="host"``; the ranks that share the value
of an environment variable with ``islands="env:VAR"``; or lists of ranks) that averages its
gradients at every inner step over its own process set, so its ranks hold bit-identical weights
and therefore the same pseudo-gradient. Sending that pseudo-gradient from every rank across the
slow link would repeat it g times, so it is sharded instead:

- the flat fragment is cut into k slices, k = the smallest island's size; local rank j < k of every
  island owns slice j and exchanges it (encoded by the codec) with the local ranks j of the other
  islands, over the *lane* j process set (one rank per island). One payload per island crosses the
  slow link in all, spread over k flows. Local ranks j >= k of larger islands own no slice.
- each island then allgathers the averaged slices over its own process set (shared memory inside a
  host), float32, so every rank of every island holds the same full average.

The average is per rank, not per island: island i of s_i ranks (of N) weighs s_i / N, as if every
rank's pseudo-gradient were averaged (an island's ranks trained on s_i shards of data). Each lane
member scales its slice by n * s_i / N (n islands) before the codec, so the codec's plain average
over the lane gives that weighting; with islands of equal size the factor is 1 and nothing is
scaled. Without islands (the default) every rank is an island of one and the lane is the job.

The process sets are made here by their members only (process_sets.add_process_set_of_members):
first each island's, then each lane's, so no rank waits on a set whose members are still busy
making another. Only the thread that calls DiLoCo.step() uses an `Islands`.
"""
from __future__ import annotations

import os
import re
import socket
from typing import Any, List, Optional, Sequence, Tuple, Union

import torch

from lightcc.common.process_sets import ProcessSet, add_process_set_of_members, global_process_set
from lightcc.torch import mpi_ops as M
from lightcc.torch.functions import allgather_object

IslandSpec = Union[None, str, Sequence[Sequence[int]]]
Groups = List[List[int]]
_ENV = re.compile(r"^env:([A-Za-z_][A-Za-z0-9_]*)$")
KINDS = "None, 'host', 'env:VARIABLE' or a non-empty list of lists of ranks"


def check_spec(spec: Any, size: int, ranks: Optional[Sequence[int]] = None) -> Union[None, str, Groups]:
    """The islands argument checked on this rank and made canonical: None, a named spec, or a partition of range(size).

    A named spec (`is_named`) is "host" or "env:VAR"; its groups are found later, from every rank's
    label (`named_groups`). Groups are sorted inside and by their first rank, so two ranks listing
    the same partition in another order agree; groups that still differ between ranks are caught
    by the agreement. `ranks`: the global ranks DiLoCo runs on (a process set's), which the groups
    must partition; default range(size), the whole job.
    """
    if spec is None or spec == "host" or (isinstance(spec, str) and _ENV.match(spec)):
        return spec
    if isinstance(spec, str) or not isinstance(spec, (list, tuple)) or not spec:
        raise ValueError(f"islands must be {KINDS}, got {spec!r}")
    members = list(range(size)) if ranks is None else list(ranks)
    whole = members == list(range(size))
    among = f"[0, {size})" if whole else f"DiLoCo's process set {members}"
    where: dict = {}
    for i, group in enumerate(spec):
        if isinstance(group, (str, bytes)) or not isinstance(group, (list, tuple)) or not group:
            raise ValueError(f"islands: island {i} must be a non-empty list of ranks, got {group!r}")
        for r in group:
            if isinstance(r, bool) or not isinstance(r, int) or r not in members:
                raise ValueError(f"islands: island {i} names {r!r}, which is not a rank in {among}")
            if r in where:
                raise ValueError(f"islands: rank {r} is in island {where[r]} and again in island {i}")
            where[r] = i
    missing = [r for r in members if r not in where]
    if missing:
        raise ValueError(f"islands: rank {missing[0]} is in no island ({len(missing)} left out); the islands must "
                         f"partition {'ranks 0..' + str(size - 1) if whole else among}")
    return sorted((sorted(int(r) for r in g) for g in spec), key=lambda g: g[0])


def host_id() -> str:
    """This rank's host as the launcher named it (LIGHTCC_HOSTNAME, HOROVOD_HOSTNAME), else the machine's name."""
    return os.environ.get("LIGHTCC_HOSTNAME") or os.environ.get("HOROVOD_HOSTNAME") or socket.gethostname()


def is_named(spec: Any) -> bool:
    """Whether a checked spec names its islands by a label each rank reads ("host", "env:VAR") rather than by ranks.

    Only named islands survive an elastic re-formation, which renumbers the ranks.
    """
    return isinstance(spec, str)


def named_groups(spec: str, local_size: int, name: str, job: ProcessSet = global_process_set) -> Groups:
    """The ranks sharing each label of a named spec, from every rank's label; the same on every rank (one allgather).

    Ranks are positions in `job`, the process set DiLoCo runs on, over which the labels are shared.
    "host": the host id (`host_id`), and on the whole job each host's rank count must be the engine's
    local size there (else the host ids this sees are not the ones the engine placed ranks by). "env:VAR": the
    value of VAR on each rank, which every rank must have set (non-empty). Raises ValueError on every
    rank alike, naming the ranks at fault.
    """
    var = None if spec == "host" else spec[len("env:"):]
    label = host_id() if var is None else os.environ.get(var, "")
    seen: List[Tuple[str, int]] = allgather_object((label, local_size), name=f"{name}.hosts", process_set=job)
    unset = [r for r, (value, _) in enumerate(seen) if not value]
    if unset:
        raise ValueError(f"islands={spec!r}: {var} is not set (or empty) on rank{'s' * (len(unset) > 1)} "
                         f"{', '.join(map(str, unset))}; set it on every rank to name its island")
    groups: dict = {}
    for r, (value, _) in enumerate(seen):
        groups.setdefault(value, []).append(r)
    for r, (value, local) in enumerate(seen if var is None and job.process_set_id == 0 else ()):
        if len(groups[value]) != local:
            raise ValueError(f"islands='host': host {value!r} has {len(groups[value])} ranks by host id but rank {r} "
                             f"has local size {local}; name the islands by 'env:VAR' or as lists of ranks")
    return sorted(groups.values(), key=lambda g: g[0])


def _members_set(ranks: List[int], name: str, job: ProcessSet) -> ProcessSet:
    """A process set of `ranks` (positions in `job`), registered by its members alone (every caller is one of them)."""
    ranks = [job.ranks[r] for r in ranks]
    ps = ProcessSet(ranks)
    ps.process_set_id = add_process_set_of_members(ranks, name)
    return ps


class Islands:
    """This rank's island, its lane and slice, and the weight of its island (owned by DiLoCo's calling thread).

    `groups` and `me` are positions in `job`, the process set DiLoCo runs on (the whole job by default).
    """

    def __init__(self, groups: Groups, me: int, name: str = "", job: ProcessSet = global_process_set) -> None:
        self.groups = groups
        mine = next(i for i, g in enumerate(groups) if me in g)
        self.island = groups[mine]
        self.local = self.island.index(me)
        self.shards = min(len(g) for g in groups)  # k: one slice per local rank every island has
        size = sum(len(g) for g in groups)
        # n * s_i / N: the codec's plain average over the lane then weighs island i by s_i / N
        self.scale = len(groups) * len(self.island) / size
        self.island_set: Optional[ProcessSet] = None
        self.lane_set = job  # every island one rank: the lane is DiLoCo's whole job
        self.lane_size = len(groups)
        if name and len(self.island) > 1:
            self.island_set = _members_set(self.island, f"{name}.island{mine}", job)
        lane = sorted(g[self.local] for g in groups) if self.local < self.shards else []
        if name and lane and len(lane) < size:
            self.lane_set = _members_set(lane, f"{name}.lane{self.local}", job)

    @classmethod
    def alone(cls, size: int, me: int, job: ProcessSet = global_process_set) -> "Islands":
        """No islands: every rank its own island, the lane the whole job (today's DiLoCo); makes no process set."""
        return cls([[r] for r in range(size)], me, job=job)

    def bounds(self, numel: int, local: Optional[int] = None) -> Tuple[int, int]:
        """[lo, hi) of the slice of a flat fragment of `numel` elements owned by local rank `local` (this rank's)."""
        j = self.local if local is None else local
        if j >= self.shards:
            return numel, numel
        base, extra = divmod(numel, self.shards)
        lo = j * base + min(j, extra)
        return lo, lo + base + (1 if j < extra else 0)

    def smallest_slice(self, numel: int) -> int:
        """Elements of the smallest non-empty slice of a fragment of `numel` (what codecs must accept)."""
        return numel // self.shards

    @property
    def dense_inside(self) -> bool:
        """Whether the island has more than one rank: inner steps then average gradients over it."""
        return self.island_set is not None

    def gather(self, part: torch.Tensor, name: str) -> Tuple[torch.Tensor, int]:
        """Every slice's average in order, from this rank's (float32); returns it and the bytes handed over."""
        if self.island_set is None:
            return part, 0
        whole = M.synchronize(M.allgather_async(part.contiguous(), name=f"{name}.island",
                                                process_set=self.island_set))
        return whole, part.numel() * part.element_size()
