"""Runs lightcc.torch.DiLoCo on process sets: separate DiLoCos at once on disjoint sets of ranks, each exact.

argv: INIT LAYOUT (INIT as in diloco_worker.py, whose helpers this reuses). LAYOUT is

- ``halves``: evens and odds, each its own DiLoCo (plain, then streaming after a data-parallel warm-up),
  both under the same tensor names;
- ``islands``: ranks {0, 1, last} as islands [[0, 1], [last]] (global ranks) and the others as a DiLoCo
  of their own.

With ``hvd`` the sets are made by `add_process_set` (dynamic process sets), with ``c10d`` by
`dist.new_group`. Each rank's weights after `finish()` must equal the one-process reference of its own
set's ranks (diloco_worker.simulate), every rank of a set must end identical, the set's workers and bytes
must be its own; a rank outside a set cannot run DiLoCo on it, nor can elastic training.
"""
from __future__ import annotations

import sys
from typing import Any, List, Optional

import diloco_worker as base
import torch

import lightcc.torch as hvd
from lightcc.torch import DiLoCo
from lightcc.torch.lowcomm.diloco import default_outer_lr

R, N, c = base.R, base.N, base.c
LAYOUT = sys.argv[2]


def make_sets(partition: List[List[int]]) -> List[Any]:
    """One process set (hvd) or torch group (c10d) per part, made on every rank in the same order."""
    if base.INIT == "hvd":
        return [hvd.add_process_set(part) for part in partition]
    import torch.distributed as dist

    return [dist.new_group(part) for part in partition]


def set_identical(model: torch.nn.Module, ranks: List[int], label: str) -> bool:
    digests = hvd.allgather_object(base.digest(model), name=f"{label}.digest")
    return len({digests[r] for r in ranks}) == 1


def case(label: str, ps: Any, ranks: List[int], steps: int, H: int, frags: List[List[str]], delay: int,
         mix: float, warmup: int = 0, islands: Optional[List[List[int]]] = None) -> None:
    model = base.mlp(100 + R)  # each rank's own init: the constructor must replace it with the set's first rank's
    opt = torch.optim.AdamW(model.parameters(), lr=0.05)
    diloco = DiLoCo(model, opt, sync_every=H, fragments=frags, delay=delay, mix=mix, warmup_steps=warmup,
                    islands=islands, process_set=ps, name=label)
    base.run_steps(model, opt, diloco, 1, steps)
    diloco.finish()
    groups = None if islands is None else [[ranks.index(r) for r in g] for g in islands]
    ref = base.simulate(steps, H, frags, delay, mix, warmup, groups, ranks)[ranks.index(R)]
    for (k, p), q in zip(model.named_parameters(), ref.parameters()):
        err = (p.detach() - q.detach()).abs().max().item()
        c.check(err < 2e-5, f"{label}: {k} differs from the reference of ranks {ranks} by {err}")
    c.check(set_identical(model, ranks, label), f"{label}: the ranks of {ranks} ended with different weights")
    workers = len(islands) if islands else len(ranks)
    s = diloco.stats()
    c.check(s["workers"] == workers and s["outer_lr"] == default_outer_lr(workers), f"{label}: M and lr {s}")
    # with islands, local rank j of an island owns a slice only below the smallest island's size
    me = ranks.index(R)
    owns = groups is None or next(g for g in groups if me in g).index(me) < min(map(len, groups))
    c.check(s["wire_bytes"] == s["dense_bytes"] and (s["wire_bytes"] > 0) == owns, f"{label}: uncompressed bytes {s}")


def outsiders(ps: Any, ranks: List[int], label: str) -> None:
    """A rank outside the set is refused on that rank alone; elastic training refuses a set."""
    model = base.mlp(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if R not in ranks:
        base.expect_error(f"{label}: outside the set", lambda: DiLoCo(model, opt, sync_every=2, process_set=ps),
                          f"rank {R} is not in")
        return
    diloco = DiLoCo(model, opt, sync_every=2, process_set=ps)
    c.check(diloco.name.endswith(f".set{diloco.process_set.process_set_id}"), f"{label}: name {diloco.name}")
    try:
        diloco.elastic_state_handler()
        c.check(False, f"{label}: elastic training took a process set")
    except ValueError as err:
        c.check("not on a process set" in str(err), f"{label}: elastic: {err}")


def run() -> None:
    everything = [[n for n, _ in base.mlp(0).named_parameters()]]
    layers = [["0.weight", "0.bias"], ["2.weight", "2.bias"]]
    if LAYOUT == "halves":
        partition = [[r for r in range(N) if r % 2 == k] for k in (0, 1)]
        sets = make_sets(partition)
        mine = R % 2
        case("sets plain", sets[mine], partition[mine], 7, 3, everything, 0, 0.0)
        case("sets streaming", sets[mine], partition[mine], 13, 4, layers, 1, 0.5, warmup=3)
        outsiders(sets[0], partition[0], "evens")
    else:
        first = [0, 1, N - 1]
        partition = [first, [r for r in range(N) if r not in first]]
        sets = make_sets(partition)
        mine = 0 if R in first else 1
        islands = [[0, 1], [N - 1]] if mine == 0 else None
        case("sets islands", sets[mine], partition[mine], 9, 3, everything, 0, 0.0, islands=islands)
        case("sets islands streaming", sets[mine], partition[mine], 10, 4, layers, 1, 0.5, islands=islands)


if __name__ == "__main__":
    torch.set_num_threads(1)  # ranks share a few cores
    if base.INIT == "hvd":
        hvd.init(process_sets="dynamic")
    else:
        base.start()
    run()
    c.finish()
