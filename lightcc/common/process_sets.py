"""Process sets: subsets of ranks that run their own collectives (Horovod's ProcessSet API)."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Union

from lightcc.common.native import core
from lightcc.common.util import is_iterable  # noqa: F401  (Horovod's process_sets has it)


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


global_process_set: ProcessSet = _GlobalProcessSet()
_registered: Dict[int, ProcessSet] = {}


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
    from lightcc.common import ops

    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    if ps.process_set_id is not None:
        raise ValueError(f"{ps} is already registered")
    for existing in _get_process_set_ids_and_ranks().values():
        if existing == ps.ranks:
            raise ValueError(f"a process set with ranks {ps.ranks} already exists")
    size = core().size()
    if not ps.ranks or ps.ranks[0] < 0 or ps.ranks[-1] >= size:
        raise ValueError(f"process set ranks {ps.ranks} must lie in [0, {size})")
    set_id = ops.process_set_change(ops.ADD_PROCESS_SET, ps.ranks)
    _register(ps, set_id)
    return ps


def remove_process_set(process_set: ProcessSet) -> bool:
    """Unregister a process set on every rank (collective). Returns False if it was not registered."""
    from lightcc.common import ops

    if process_set.process_set_id is None or process_set.process_set_id == 0:
        return False
    if process_set.process_set_id not in _get_process_set_ids_and_ranks():
        return False
    ops.process_set_change(ops.REMOVE_PROCESS_SET, [process_set.process_set_id])
    _registered.pop(process_set.process_set_id, None)
    process_set.process_set_id = None
    return True
