"""Process sets (static, duplicate and dynamic), timeline, stall inspector: one mode per run."""
from __future__ import annotations

import json
import os
import sys
import time

import common  # noqa: F401
from common import Checker

import numpy as np

import lightcc as hvd


def process_sets_static(c: Checker) -> None:
    n = int(os.environ["LIGHTCC_SIZE"])
    evens = hvd.ProcessSet(range(0, n, 2))
    odds = hvd.ProcessSet(range(1, n, 2))
    hvd.init(process_sets=[evens, odds])
    r = hvd.rank()
    c.check(evens.process_set_id == 1 and odds.process_set_id == 2, "ids assigned in order")
    from lightcc.common.process_sets import _get_process_set_ids_and_ranks
    c.check(_get_process_set_ids_and_ranks() == {0: list(range(n)), 1: evens.ranks, 2: odds.ranks}, "id table")
    mine = evens if r % 2 == 0 else odds
    other = odds if r % 2 == 0 else evens
    c.check(mine.included() and not other.included() and mine.rank() == mine.ranks.index(r), "membership")
    out = hvd.allreduce(np.ones(5) * r, op=hvd.Sum, name="ps", process_set=mine)
    c.check(np.allclose(out, sum(mine.ranks)), f"allreduce in set: {out}")
    g = hvd.allgather(np.array([r]), name="ps.g", process_set=mine)
    c.check(g.tolist() == mine.ranks, "allgather in set")
    b = hvd.broadcast(np.array([r]), mine.ranks[-1], name="ps.b", process_set=mine)
    c.check(b.tolist() == [mine.ranks[-1]], "broadcast in set (root is a global rank)")
    try:
        hvd.allreduce(np.ones(1), name="x", process_set=other)
        c.check(False, "op on a set we are not in did not raise")
    except ValueError as e:
        c.check("not a member" in str(e), str(e))
    # interleave global and per-set ops, cached repeatedly
    for i in range(20):
        a = hvd.allreduce(np.ones(3), op=hvd.Sum, name="glob")
        s = hvd.allreduce(np.ones(3), op=hvd.Sum, name="set", process_set=mine)
        c.check(np.allclose(a, n) and np.allclose(s, mine.size()), f"interleaved {i}")
    hvd.barrier(process_set=mine)
    hvd.shutdown()


def process_sets_duplicate(c: Checker) -> None:
    """init refuses duplicate static sets with ValueError on every rank, then inits normally."""
    n = int(os.environ["LIGHTCC_SIZE"])
    r = int(os.environ["LIGHTCC_RANK"])
    rest = range(1, n) if r == 0 else reversed(range(1, n))  # rank order within a set does not matter
    cases = {
        "same set twice": [hvd.ProcessSet([0]), hvd.ProcessSet(rest), hvd.ProcessSet([0])],
        "the global set": [hvd.ProcessSet([0]), hvd.ProcessSet(range(n - 1, -1, -1))],
    }
    for what, sets in cases.items():
        try:
            hvd.init(process_sets=sets)
            c.check(False, f"init accepted {what}")
        except ValueError as e:
            c.check("duplicate" in str(e) and not hvd.is_initialized(), f"{what}: {e}")
        c.check(all(ps.process_set_id is None for ps in sets), f"{what}: no id assigned")
    zero, others = hvd.ProcessSet([0]), hvd.ProcessSet(range(1, n))
    hvd.init(process_sets=[zero, others])
    from lightcc.common.process_sets import _get_process_set_ids_and_ranks
    c.check(_get_process_set_ids_and_ranks() == {0: list(range(n)), 1: [0], 2: list(range(1, n))},
            "init after the refusals registers the sets")
    out = hvd.allreduce(np.ones(2), op=hvd.Sum, name="dup.after")
    c.check(np.allclose(out, n), "collective after the refusals")
    hvd.shutdown()


def process_sets_dynamic(c: Checker) -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    try:
        hvd.add_process_set([0])
        c.check(False, "add_process_set without HOROVOD_DYNAMIC_PROCESS_SETS did not raise")
    except ValueError as e:
        c.check("HOROVOD_DYNAMIC_PROCESS_SETS" in str(e), str(e))
    hvd.shutdown()
    # init(process_sets="dynamic") allows them for that init only, leaving the environment alone.
    hvd.init(process_sets="dynamic")
    ps = hvd.add_process_set([0])
    c.check(ps.process_set_id == 1 and "HOROVOD_DYNAMIC_PROCESS_SETS" not in os.environ,
            "init(process_sets='dynamic') without touching os.environ")
    hvd.shutdown()
    hvd.init()
    try:
        hvd.add_process_set([0])
        c.check(False, "dynamic process sets outlived the init that asked for them")
    except ValueError:
        pass
    hvd.shutdown()
    os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"
    hvd.init()
    first_ranks = [0, n - 1] if n > 2 else [0]
    first = hvd.add_process_set(first_ranks)
    c.check(first.process_set_id == 1, f"first id {first.process_set_id}")
    try:
        hvd.add_process_set(list(reversed(first_ranks)))
        c.check(False, "duplicate process set accepted")
    except ValueError:
        c.check(True, "duplicate rejected")
    if first.included():
        out = hvd.allreduce(np.ones(2), op=hvd.Sum, name="dyn", process_set=first)
        c.check(np.allclose(out, len(first_ranks)), "op in dynamic set")
    c.check(hvd.remove_process_set(first), "removed")
    c.check(not hvd.remove_process_set(first), "second removal is False")
    second = hvd.add_process_set(list(range(1, n)))
    c.check(second.process_set_id == 2, "ids are not reused")
    if second.included():
        out = hvd.allreduce(np.ones(2), op=hvd.Sum, name="dyn2", process_set=second)
        c.check(np.allclose(out, n - 1), "op in second set")
    hvd.shutdown()


def _in_file_within(path: str, parts: list, seconds: float) -> str:
    """Polls the timeline file until it holds every part (or the deadline passes); returns its text."""
    deadline = time.monotonic() + seconds
    while True:
        text = open(path).read() if os.path.exists(path) else ""
        if all(p in text for p in parts) or time.monotonic() > deadline:
            return text
        time.sleep(0.01)


def timeline(c: Checker, path: str) -> None:
    hvd.init()
    for i in range(3):
        hvd.allreduce(np.ones(10), name="tl.tensor")
    hvd.broadcast(np.ones(3), 0, name="tl.b")
    if int(os.environ["LIGHTCC_RANK"]) == 0:
        # Written as it goes (as Horovod's): readable before stop or shutdown. The deadline is
        # generous for a loaded machine; a timeline written only at close never gets there.
        want = ["allreduce.tl.tensor", "NEGOTIATE_ALLREDUCE", "BROADCAST", "CYCLE_START"]
        live = _in_file_within(path, want, 10)
        c.check(all(p in live for p in want), f"timeline not written while running: {live[-500:]!r}")
    hvd.barrier()  # rank 1 stays up until rank 0 has read
    hvd.shutdown()
    if int(os.environ["LIGHTCC_RANK"]) == 0:
        events = json.load(open(path))
        names = {e.get("name") for e in events}
        rows = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
        c.check("allreduce.tl.tensor" in rows, f"tensor row missing: {rows}")
        c.check({"NEGOTIATE_ALLREDUCE", "ALLREDUCE", "BROADCAST", "CYCLE_START"} <= names, f"phases: {names}")
        c.check(any("start_time_since_epoch_in_micros" in e.get("args", {}) for e in events), "epoch stamp")


def stall(c: Checker) -> None:
    hvd.init()
    r = hvd.rank()
    if r == 0:
        h = hvd.allreduce_async(np.ones(2), name="lonely")
        try:
            hvd.synchronize(h)
            c.check(False, "stalled tensor completed")
        except hvd.LightCCInternalError as e:
            c.check("lonely" in str(e) and "never submitted" in str(e), str(e))
    else:
        time.sleep(6)
    hvd.shutdown()


def main() -> None:
    c = Checker(int(os.environ["LIGHTCC_RANK"]))
    mode = sys.argv[1]
    if mode == "static":
        process_sets_static(c)
    elif mode == "duplicate":
        process_sets_duplicate(c)
    elif mode == "dynamic":
        process_sets_dynamic(c)
    elif mode == "timeline":
        timeline(c, os.environ["HOROVOD_TIMELINE"])
    elif mode == "stall":
        stall(c)
    c.finish()


if __name__ == "__main__":
    main()
