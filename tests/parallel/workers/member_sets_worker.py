"""Member-only process sets: made and removed by their members alone, seen alike by every rank."""
from __future__ import annotations

import os
import sys
import time
from typing import List

import common  # noqa: F401
from common import Checker

import numpy as np

import lightcc as hvd
from lightcc.common.exceptions import LightCCMismatchError
from lightcc.common.process_sets import (ProcessSet, _get_process_set_ids_and_ranks, add_process_set_of_members,
                                         remove_process_set_of_members)


def ids_of(ranks: List[int]) -> List[int]:
    """This rank's ids of every registered set with exactly `ranks`."""
    return sorted(k for k, v in _get_process_set_ids_and_ranks().items() if v == ranks)


def settle(name: str) -> None:
    """A global op through the engine's cycles (an allgather: never a direct step), so every change
    agreed before it has been applied on this rank when it returns."""
    hvd.allgather(np.ones(1), name=name)


def same_everywhere(value: int, name: str) -> bool:
    got = hvd.allgather(np.array([value], dtype=np.int64), name=name)
    return bool(np.all(got == value))


def allreduce_in(set_id: int, ranks: List[int], name: str) -> np.ndarray:
    ps = ProcessSet(ranks)
    ps.process_set_id = set_id
    return hvd.allreduce(np.ones(3) * (hvd.rank() + 1), op=hvd.Sum, name=name, process_set=ps)


def basic(c: Checker) -> None:
    # No HOROVOD_DYNAMIC_PROCESS_SETS: member-only sets do not need it.
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    pair = [0, 2]
    hvd.allreduce(np.ones(1), name="warmup")
    if r in pair:
        set_id = add_process_set_of_members(pair, "pair")
        c.check(set_id == 1, f"first member-only set gets id 1, got {set_id}")
        out = allreduce_in(set_id, pair, "in.pair")
        c.check(np.allclose(out, 1 + 3), f"allreduce among the pair: {out}")
    else:
        time.sleep(0.5)  # idle, calling nothing, while the pair registers its set
    out = hvd.allreduce(np.ones(2), op=hvd.Sum, name="after.pair")
    c.check(np.allclose(out, n), f"global allreduce after the member-only add: {out}")
    settle("settle.pair")
    seen = ids_of(pair)
    c.check(seen == [1], f"rank {r} has the pair's set under id 1: {seen}")
    c.check(same_everywhere(seen[0] if seen else -1, "ids.pair"), "every rank gives the pair's set the same id")

    # torch allows new_group twice with the same ranks: a second set, a new id.
    if r in pair:
        again = add_process_set_of_members(pair, "pair.again")
        c.check(again == 2, f"same ranks again: a second set, id 2, got {again}")
        c.check(np.allclose(allreduce_in(again, pair, "in.pair.again"), 4), "allreduce in the second set")
    settle("after.again")
    c.check(ids_of(pair) == [1, 2], f"both sets of the pair registered on rank {r}: {ids_of(pair)}")

    # Members only remove it; afterwards nobody has it.
    if r in pair:
        remove_process_set_of_members(1)
    settle("after.remove")
    c.check(ids_of(pair) == [2], f"set 1 gone on rank {r}: {ids_of(pair)}")
    if r not in pair:
        try:
            add_process_set_of_members(pair, "not.mine")
            c.check(False, "a non-member's member-only add was accepted")
        except ValueError as e:
            c.check("not in" in str(e), str(e))
    hvd.shutdown()


def concurrent(c: Checker) -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    # Four ranks: two disjoint sets made at once. Three: two overlapping ones (rank 1 in both).
    sets = {"left": [0, 1], "right": [2, 3]} if n == 4 else {"left": [0, 1], "right": [1, 2]}
    made = {}
    for name, ranks in sets.items():
        if r in ranks:
            made[name] = add_process_set_of_members(ranks, name)
    for name, set_id in made.items():
        out = allreduce_in(set_id, sets[name], f"in.{name}")
        c.check(np.allclose(out, sum(x + 1 for x in sets[name])), f"allreduce in {name}: {out}")
    settle("after.both")
    for name, ranks in sets.items():
        seen = ids_of(ranks)
        c.check(len(seen) == 1, f"rank {r} has set {name} once: {seen}")
        c.check(same_everywhere(seen[0] if seen else -1, f"ids.{name}"), f"set {name} has one id everywhere")
        if name in made:
            c.check(seen == [made[name]], f"the id {name}'s members got is the registered one")
    c.check(sorted(ids_of(sets["left"]) + ids_of(sets["right"])) == [1, 2], "the two sets took ids 1 and 2")
    hvd.shutdown()


def mismatch(c: Checker) -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    mine = {0: [0, 1], 1: [0, 1, 2]}
    if r in mine:
        try:
            add_process_set_of_members(mine[r], "disputed")
            c.check(False, "members that disagree on the ranks got a set")
        except LightCCMismatchError as e:
            msg = str(e)
            c.check("rank 0" in msg and "rank 1" in msg and "[0, 1]" in msg and "[0, 1, 2]" in msg,
                    f"the error names both ranks and both lists: {msg}")
    out = hvd.allreduce(np.ones(2), op=hvd.Sum, name="after.mismatch")
    c.check(np.allclose(out, n), "the job goes on after the failed add")
    settle("after.mismatch.settle")
    c.check(not any(v != list(range(n)) for v in _get_process_set_ids_and_ranks().values()),
            "the failed add registered nothing")
    hvd.shutdown()


def dead(c: Checker) -> None:
    hvd.init()
    r = hvd.rank()
    hvd.allreduce(np.ones(1), name="warmup")
    if r == 2:
        time.sleep(0.3)  # rank 0's add is on its way
        os._exit(3)  # a member dies instead of adding the set
    t = time.monotonic()
    try:
        if r == 0:
            add_process_set_of_members([0, 2], "orphan")
        else:
            time.sleep(0.5)
            hvd.allreduce(np.ones(1), name="after.death")
        c.check(False, f"rank {r} returned although member 2 died")
    except hvd.LightCCInternalError as e:
        print(f"raised after {time.monotonic() - t:.2f}s: {e}", flush=True)
        c.check("rank 2" in str(e) or "has exited" in str(e), f"the error names the dead peer: {e}")
    # No shutdown and no exit handlers: the job is broken.
    print(f"rank {r}: {c.passed} passed, {len(c.failures)} failed", flush=True)
    os._exit(1 if c.failures else 0)


def main() -> None:
    c = Checker(int(os.environ["LIGHTCC_RANK"]))
    {"basic": basic, "concurrent": concurrent, "mismatch": mismatch, "dead": dead}[sys.argv[1]](c)
    c.finish()


if __name__ == "__main__":
    main()
