"""DiLoCo under elastic `run`: survivors keep their progress, a lost worker is left out, a new one starts from θ.

`lightcc.torch.elastic.TorchState(diloco=diloco, step=0)` takes `DiLoCoStateHandler` for the
DiLoCo object (`DiLoCo.elastic_state_handler`). What each of `run`'s moves does to it:

- **commit** (`save`): records the step count. Nothing is copied: the shared weights θ change only
  in outer steps, which every rank takes alike, and the local weights are this rank's own progress,
  which a failure must not take away.
- **failure** (`restore`, before the re-formation): exchanges in flight on the failed engine are
  dropped and their residuals put back as they were before encoding. The step count goes back to
  the commit, so the script's re-run of the failed step starts again the exchanges that step had
  started; a rank that took the step's inner step already does not take it again (DiLoCo.step
  skips inner steps below the count it reached), so local weights keep every inner step once.
- **re-formation** (`reset`, `sync`): one `allgather_object` tells who has trained in this job (a
  *member*) and checks that every rank runs the same DiLoCo (settings, parameters), then rank 0 of
  the new world (or the rank TorchState names) gives everyone its step count, θ and the state of
  its exchanges. An exchange that had started before the commit and was dropped is started again
  at once: members send θ − local scaled by N / (ranks of islands with a member), new islands
  nothing (their local weights are θ), so the average is the members' and the lost workers'
  pseudo-gradients are left out.
  New workers take θ as their weights, and rank 0's outer-optimizer state, inner-optimizer state
  and buffers; their residuals start at zero.

With islands="host" or "env:VAR" the islands are found again in the new world from every rank's
label (new process sets: the old ones died with the old engine), named by a round every rank agrees
on; a new worker in an island with members copies a member (weights, buffers, inner and outer
optimizer state) so the island stays identical, and a new island starts from θ.

`compression="topk"` keeps its residuals in the engine, which a re-formation replaces on every rank:
they restart at zero everywhere, so the ranks stay alike (what they had not sent yet is dropped).
Not covered, and refused when the handler is made: islands given as lists of ranks (a re-formation
renumbers the ranks they name: name the groups by an environment variable instead), and DiLoCo on a
process set (the sets die with the engine).
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import torch

from lightcc.common.basics import local_size, rank, size
from lightcc.common.native import core
from lightcc.torch import mpi_ops as M
from lightcc.torch.elastic.state import StateHandler
from lightcc.torch.functions import allgather_object, broadcast_object, broadcast_parameters
from lightcc.torch.lowcomm import checks
from lightcc.torch.lowcomm.islands import Islands, is_named, named_groups


class DiLoCoStateHandler(StateHandler):
    """Commits, restores and syncs one `DiLoCo` for lightcc's elastic `run` (module docstring)."""

    def __init__(self, diloco: Any) -> None:
        if diloco.islands is not None and not is_named(diloco.islands):
            raise ValueError("lightcc DiLoCo: elastic training takes islands=None, 'host' or 'env:VARIABLE', not "
                             "lists of ranks (a re-formation renumbers the ranks they name; name each rank's "
                             "island by an environment variable instead)")
        if diloco.process_set.process_set_id != 0:
            raise ValueError("lightcc DiLoCo: elastic training runs DiLoCo on the whole job, not on a process set "
                             "(a re-formation replaces the engine and its process sets)")
        super().__init__(diloco)
        self._committed = 0
        self.save()

    def save(self) -> None:
        self._committed = self.value._steps
        self._count_bytes()

    def _count_bytes(self) -> None:
        """The engine's byte count now: an engine replaced later took its count with it."""
        try:
            self._engine_now = int(core().stats()["bytes_sent"])
        except Exception:  # noqa: BLE001  (an engine already gone counts nothing more)
            pass

    def _drop_inflight(self) -> None:
        for ex in self.value._fragments:
            if ex.inflight:
                # Started by a step the script will run again: that step starts it again.
                ex.redo = ex.started_at <= self._committed
                ex.drop()

    def restore(self) -> None:
        # Redo marks stay until a sync succeeds: a failure during the re-sync must not forget them.
        self._count_bytes()
        self._drop_inflight()
        self.value._steps = self._committed

    def reset(self) -> None:
        """The new world: its size, exchanges of the old engine dropped, the engine's byte count from zero.

        A re-formation for new hosts (a commit saw them) comes here without `restore`: the commit
        has just been saved, so every exchange in flight is started again in `sync`.
        """
        d = self.value
        self._drop_inflight()
        d._engine_prior += getattr(self, "_engine_now", d._engine_bytes) - d._engine_bytes
        d._size, d._me = size(), rank()
        if d.islands is None:
            d._islands = Islands.alone(d._size, rank())
            for ex in d._fragments:
                ex.islands = d._islands
        else:  # the islands are found again in sync (a collective); the old sets died with the old engine
            d._islands = None
        d._engine_bytes = self._engine_now = int(core().stats()["bytes_sent"])
        d._recoveries += 1

    @torch.no_grad()
    def sync(self, root_rank: int = 0) -> None:
        d = self.value
        members, round_ = _agree(d, root_rank)
        if d._islands is None:
            _regroup(d, round_)
        d._follow_workers()  # M may have changed; before the root's outer state goes to new workers below
        if not any(members):  # the job's start: the constructor's broadcast made every rank alike
            d._member = True
            return
        groups = d._islands.groups
        # A new island has no member (a new host); a new worker in an island with members copies them.
        fresh = [g for g in groups if not any(members[r] for r in g)]
        contributing = sum(len(g) for g in groups if any(members[r] for r in g))
        mine = d._islands.island
        state = broadcast_object(_root_state(d, heavy=bool(fresh)) if rank() == root_rank else None,
                                 root_rank=root_rank, name=f"{d.name}.elastic.state")
        for ex in d._fragments:  # θ: alike on members already, unless an exchange reached some and not others
            for h in [M.broadcast_async_(s, root_rank, name=f"{ex.name}.elastic.shared.{i}")
                      for i, s in enumerate(ex.shared)]:
                M.synchronize(h)
        d._steps, d._dirty = state["steps"], list(state["dirty"])
        d._high = max(d._high, d._steps) if d._member else d._steps
        if mine in fresh:
            _join(d, state)
        elif not all(members[r] for r in mine):
            _join_island(d, min(r for r in mine if members[r]))
        weight = 0.0 if mine in fresh else len(members) / contributing
        for f, (ex, (status, due, arrived)) in enumerate(zip(d._fragments, state["fragments"])):
            ex.due, ex.arrived = due, arrived
            ex.redo = False
            if status == "redo":
                ex.start(due, at=d._steps, weight=weight)
                d._redone += 1
                if due <= d._steps:
                    d._apply(f, d.mix)
        d._member = True


def _regroup(d: Any, round_: int) -> None:
    """Named islands ('host', 'env:VAR') in the new world: their ranks found again, new sets, each rank's slices.

    `round_` names this world's collectives and sets; it must come from `_agree` (the same on every
    rank), not from this rank's own count of recoveries, which a worker that joined later has fewer of.
    A residual whose slice did not move stays; the others start from zero (what they held belonged
    to the old slices). Raises ValueError alike on every rank if a rank lacks its island's label or a
    fragment is too small to cut.
    """
    tag = f"{d.name}.r{round_}"
    try:
        groups = named_groups(d.islands, local_size(), tag)
        layout = Islands(groups, rank())
        for ex in d._fragments:
            ex.place(layout, keep_residual=True)
    except ValueError as err:
        raise ValueError(f"lightcc DiLoCo on rank {rank()}: {err}") from None
    d._islands = Islands(groups, rank(), tag)
    for ex in d._fragments:
        ex.place(d._islands, keep_residual=True)


def _agree(d: Any, root_rank: int) -> Tuple[List[bool], int]:
    """Who has trained in this job, and a round number alike on every rank (the most recoveries any
    rank has seen); every rank raises alike if one runs another DiLoCo than the root."""
    sig = checks.signature(d._settings, checks.trainable(d.model))
    seen: List[Tuple[bool, Any, int]] = allgather_object((d._member, sig, d._recoveries),
                                                         name=f"{d.name}.elastic.members")
    for r, (_, other, _) in enumerate(seen):
        diff = checks.mismatch(r, seen[root_rank][1], other)
        if diff is not None:
            raise ValueError(f"lightcc DiLoCo on rank {rank()}: rank {r} joined with another DiLoCo than rank "
                             f"{root_rank}'s: {diff.replace('rank 0', f'rank {root_rank}')}")
    return [m for m, _, _ in seen], max(n for _, _, n in seen)


def _root_state(d: Any, heavy: bool) -> Dict[str, Any]:
    """What every rank takes from the root; `heavy` adds what only new workers need."""
    frags = [("redo" if ex.redo else "none", ex.due, None if ex.arrived is None else ex.arrived.clone())
             for ex in d._fragments]
    state: Dict[str, Any] = {"steps": d._steps, "dirty": list(d._dirty), "fragments": frags}
    if heavy:
        params = {n for n, _ in d.model.named_parameters()}
        warm = d._steps < d.warmup_steps  # θ is set at the warm-up's end; until then every rank holds the same weights
        state["model"] = {k: v.clone() for k, v in d.model.state_dict().items() if warm or k not in params}
        state["inner"] = d.inner_optimizer.state_dict()
        state["outer"] = [ex.outer.state_dict() for ex in d._fragments]
    return state


def _join(d: Any, state: Dict[str, Any]) -> None:
    """A new worker: θ (or, in the warm-up, the root's weights), the root's buffers and optimizer states."""
    for ex, outer in zip(d._fragments, state["outer"]):
        for s, p in zip(ex.shared, ex.params):
            p.copy_(s)
        ex.outer.load_state_dict(outer)
        if ex.residual is not None:
            ex.residual.zero_()
    d.model.load_state_dict(state["model"], strict=False)
    d.inner_optimizer.load_state_dict(state["inner"])


def _join_island(d: Any, source: int) -> None:
    """Every rank of an island that new workers joined takes `source`'s weights, buffers, inner and outer state.

    The island's ranks must stay identical (they average their gradients at every inner step), so the
    newcomers copy a member of their island rather than θ; every rank steps θ with its own outer
    optimizer, so a newcomer needs the members' momentum too. Collective over the island.
    """
    island = d._islands.island_set
    broadcast_parameters(d.model.state_dict(), root_rank=source, process_set=island)
    mine = ({"inner": d.inner_optimizer.state_dict(), "outer": [ex.outer.state_dict() for ex in d._fragments]}
            if rank() == source else None)
    state = broadcast_object(mine, root_rank=source, name=f"{d.name}.elastic.island_state", process_set=island)
    if not d._member:
        d.inner_optimizer.load_state_dict(state["inner"])
        for ex, outer in zip(d._fragments, state["outer"]):
            ex.outer.load_state_dict(outer)
