"""Process sets: subsets of ranks that run their own collectives (Horovod's ProcessSet API).

Two ways to register one. Horovod's `add_process_set` / `remove_process_set` are collective:
every rank calls them (and they need dynamic process sets). `add_process_set_of_members` /
`remove_process_set_of_members` are called only by the set's members, as torch's `new_group`
calls a backend only on the new group's ranks: the engine waits for those ranks alone, yet every
rank's table gets the set under the same id (csrc/engine/process_sets.h, kMembersOnlySetId).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Union

from lightcc.common.native import core
from lightcc.common.util import is_iterable  # noqa: F401  (Horovod's process_sets has it)

if TYPE_CHECKING:
    from lightcc.common.ops import TensorArgs


class ProcessSet:
    """A set of global ranks. Registered at `init(process_sets=[...])` or by `add_process_set`.

    `process_set_id` is None until registration; `global_process_set` (id 0) holds every rank.
    """

    def __init__(self, ranks_or_comm: Union[Sequence[int], object]) -> None:
        self.process_set_id: Optional[int] = None
        self.mpi_comm = None
        if hasattr(ranks_or_comm, "Get_group"):  # an mpi4py communicator
            from mpi4py import MPI

            self.mpi_comm = ranks_or_comm
            world = MPI.COMM_WORLD.Get_group()
            group = ranks_or_comm.Get_group()
            self.ranks = sorted(MPI.Group.Translate_ranks(group, list(range(group.Get_size())), world))
        else:
            self.ranks = sorted(int(r) for r in ranks_or_comm)
        if len(set(self.ranks)) != len(self.ranks):
            raise ValueError(f"process set ranks contain duplicates: {self.ranks}")

    def _require(self) -> int:
        if self.process_set_id is None:
            raise ValueError(f"process set {self.ranks} is not registered; pass it to init() or add_process_set()")
        return self.process_set_id

    def size(self) -> int:
        """Number of ranks in the set."""
        self._require()
        return len(self.ranks)

    def rank(self) -> int:
        """This process's index within the set (ValueError when it is not a member)."""
        self._require()
        me = core().rank()
        if me not in self.ranks:
            raise ValueError(f"rank {me} is not in process set {self.process_set_id} ({self.ranks})")
        return self.ranks.index(me)

    def included(self) -> bool:
        """Whether this process is a member."""
        self._require()
        return core().rank() in self.ranks

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProcessSet) and self.ranks == other.ranks and self.process_set_id == other.process_set_id

    def __hash__(self) -> int:
        return hash((tuple(self.ranks), self.process_set_id))

    def __repr__(self) -> str:
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"


class _GlobalProcessSet(ProcessSet):
    """Every rank; its ranks are known only after init."""

    def __init__(self) -> None:
        self.process_set_id = 0
        self.mpi_comm = None

    @property
    def ranks(self) -> List[int]:  # type: ignore[override]
        return list(range(core().size()))

    @ranks.setter
    def ranks(self, value: List[int]) -> None:
        pass

    def __repr__(self) -> str:
        # Shown in signatures and tracebacks, also before init, when the ranks are not known yet.
        try:
            return super().__repr__()
        except ValueError:
            return "ProcessSet(process_set_id=0, ranks=<every rank, after init>)"


global_process_set: ProcessSet = _GlobalProcessSet()
_registered: Dict[int, ProcessSet] = {}

# The process_set_id a member-only change is submitted on: not a set, but the engine's mark that
# only the ranks concerned submit it (csrc/engine/process_sets.h, kMembersOnlySetId).
MEMBERS_ONLY_SET_ID = -1


def _register(process_set: ProcessSet, set_id: int) -> None:
    process_set.process_set_id = set_id
    _registered[set_id] = process_set


def _reset() -> None:
    for ps in _registered.values():
        ps.process_set_id = None
    _registered.clear()


def _check_static(process_sets: Sequence[ProcessSet], size: int) -> None:
    """ValueError unless every set lies in [0, size) and no two sets (nor a set and the global
    set) hold the same ranks; Horovod refuses such duplicates at init as well.

    A pure function of the arguments, so ranks passing the same sets (in any rank order) decide
    alike before any of them connects.
    """
    seen = {tuple(range(size)): "the global process set"}
    for i, ps in enumerate(process_sets):
        if not ps.ranks or ps.ranks[0] < 0 or ps.ranks[-1] >= size:
            raise ValueError(f"process set ranks {ps.ranks} must lie in [0, {size})")
        key = tuple(ps.ranks)
        if key in seen:
            raise ValueError(f"process_sets entry number {i} (ranks {ps.ranks}) is a duplicate of {seen[key]}; "
                             "each process set must hold a different set of ranks")
        seen[key] = f"process_sets entry number {i}"


def _get_process_set_ids_and_ranks() -> Dict[int, List[int]]:
    """Every registered process set id with its ranks (as Horovod's `_basics` offers)."""
    return {int(k): list(v) for k, v in core().process_sets().items()}


def _id_of(process_set: Optional[ProcessSet]) -> int:
    if process_set is None:
        return 0
    return process_set._require()


def add_process_set(process_set: Union[ProcessSet, Sequence[int]]) -> ProcessSet:
    """Register a new process set on every rank (a collective call; needs dynamic process sets)."""
    from lightcc.common import op_spec, ops

    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    if ps.process_set_id is not None:
        raise ValueError(f"{ps} is already registered")
    for existing in _get_process_set_ids_and_ranks().values():
        if existing == ps.ranks:
            raise ValueError(f"a process set with ranks {ps.ranks} already exists")
    size = core().size()
    if not ps.ranks or ps.ranks[0] < 0 or ps.ranks[-1] >= size:
        raise ValueError(f"process set ranks {ps.ranks} must lie in [0, {size})")
    set_id = ops.process_set_change(op_spec.code("add_process_set"), ps.ranks)
    _register(ps, set_id)
    return ps


def remove_process_set(process_set: ProcessSet) -> bool:
    """Unregister a process set on every rank (collective). Returns False if it was not registered."""
    from lightcc.common import op_spec, ops

    if process_set.process_set_id is None or process_set.process_set_id == 0:
        return False
    if process_set.process_set_id not in _get_process_set_ids_and_ranks():
        return False
    ops.process_set_change(op_spec.code("remove_process_set"), [process_set.process_set_id])
    _registered.pop(process_set.process_set_id, None)
    process_set.process_set_id = None
    return True


def _member_ranks(ranks: Sequence[int]) -> List[int]:
    members = sorted(int(r) for r in ranks)
    size, me = core().size(), core().rank()
    if not members or members[0] < 0 or members[-1] >= size:
        raise ValueError(f"process set ranks {members} must be given and lie in [0, {size})")
    if len(set(members)) != len(members):
        raise ValueError(f"process set ranks contain duplicates: {members}")
    if me not in members:
        raise ValueError(f"rank {me} is not in {members}: only a member-only set's members call for it")
    return members


def add_process_set_of_members(ranks: Sequence[int], name: str) -> int:
    """Register a process set of `ranks`, called by those ranks only; returns its id.

    Unlike `add_process_set`, ranks outside the set call nothing and dynamic process sets need not
    be on; the engine completes the call once every member has made it, and registers the set on
    every rank under the returned id. `name` must be the same on all members and unique among
    adds in flight at once (two sets may be made concurrently by different members under different
    names); ranks may repeat an existing set's, which gives a second set. Members that disagree on
    `ranks` all get an error naming them.
    """
    from lightcc.common import ops

    args = members_set_args(ranks, name)
    return ops.run_simple(args.op, args.name, args.process_set_id, args.aux)


def members_set_args(ranks: Sequence[int], name: str) -> TensorArgs:
    """The submission that makes a member-only set (see `add_process_set_of_members`), for callers
    that queue it asynchronously (the torch.distributed backend's point-to-point pairs)."""
    from lightcc.common import op_spec
    from lightcc.common.op_args import control

    if not isinstance(name, str) or not name:
        raise ValueError(f"a member-only process set needs a non-empty name, got {name!r}")
    members = _member_ranks(ranks)
    return control(op_spec.code("add_process_set"), f"process_set.members.add.{name}", MEMBERS_ONLY_SET_ID, members)


def remove_process_set_of_members(process_set_id: int) -> None:
    """Unregister a process set made by `add_process_set_of_members`, called by its members only.

    Completes once every member has called it; the set then leaves every rank's table, and any
    of its tensors still pending fail.
    """
    from lightcc.common import op_spec, ops

    set_id = int(process_set_id)
    ranks = _get_process_set_ids_and_ranks().get(set_id)
    if set_id == 0 or ranks is None:
        raise ValueError(f"process set {set_id} is not a registered set other than the global one")
    _member_ranks(ranks)
    ops.run_simple(op_spec.code("remove_process_set"), f"process_set.members.remove.{set_id}", MEMBERS_ONLY_SET_ID,
                   [set_id])
    stale = _registered.pop(set_id, None)
    if stale is not None:
        stale.process_set_id = None
