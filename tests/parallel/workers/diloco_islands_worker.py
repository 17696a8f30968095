"""Runs lightcc.torch.DiLoCo with islands on real ranks: reference, islands in step, codecs, checkpoints, bad input.

argv: INIT MODES ISLANDS (INIT and MODES as in diloco_worker.py, whose helpers this reuses). ISLANDS is
``host``, ``env:VAR`` or a JSON list of lists of ranks (``[[0,1],[2]]``); the test gives fake host ids
for ``host`` and each rank's VAR for ``env:VAR``.
MODES is a comma list of

- ``reference``: plain DiLoCo, Streaming DiLoCo (2 fragments, delay 1, mix 0.5) and plain DiLoCo after
  a data-parallel warm-up, with islands: the ranks of an island must hold identical weights after every
  step, every rank must equal a one-process reference (island-mean gradients at each inner step, the
  per-rank mean pseudo-gradient, Nesterov SGD written out) after `finish()`, and the counted bytes
  must be this rank's slice (across islands) and the island's gradients and slices (inside);
- ``train``: a regression under each codec (none, bf16, int8, int4, sparseloco, and streaming int4) with islands:
  the loss falls, every rank ends identical, wire bytes are the slice's;
- ``topk``: the same with the engine's top-k over the lanes (the test starts the engine with it);
- ``checkpoint``: streaming int8 with islands saved mid-exchange and resumed ends bit-identical;
- ``named``: the islands of ``host`` or ``env:VAR`` are the ranks sharing a host id or VAR's value;
- ``elastic``: named islands under the elastic handler: re-formed without a failure, bit-identical to the
  straight run; a rank posing as a new worker copies its island;
- ``bad``: bad islands raise the same ValueError on every rank; a valid DiLoCo runs afterwards.
"""
from __future__ import annotations

import io
import json
import sys
from typing import Dict, List

import diloco_worker as base
import torch

from lightcc.torch import DiLoCo
from lightcc.torch.functions import allgather_object

R, N, c = base.R, base.N, base.c
SPEC = sys.argv[3]
ISLANDS = SPEC if SPEC == "host" or SPEC.startswith("env:") else json.loads(SPEC)


def groups_of(diloco: DiLoCo) -> List[List[int]]:
    return diloco._islands.groups


def island_identical(model: torch.nn.Module, groups: List[List[int]], label: str) -> bool:
    digests = allgather_object(base.digest(model), name=f"{label}.island.digest")
    return all(len({digests[r] for r in g}) == 1 for g in groups)


def slice_numel(numel: int, groups: List[List[int]], rank: int) -> int:
    """Elements of `rank`'s slice of a flat fragment (islands.py: k = smallest island size; local rank j < k owns j)."""
    k = min(len(g) for g in groups)
    j = next(g for g in groups if rank in g).index(rank)
    return 0 if j >= k else numel // k + (1 if j < numel % k else 0)


def check_bytes(label: str, diloco: DiLoCo, model: torch.nn.Module, groups: List[List[int]], warmup: int) -> None:
    s = diloco.stats()
    numel = sum(p.numel() for p in model.parameters())
    mine = next(g for g in groups if R in g)
    across = sum(4 * slice_numel(ex.numel, groups, R) * ex.exchanges for ex in diloco._fragments)
    c.check(s["wire_bytes"] == s["dense_bytes"] == across, f"{label}: bytes across islands {s}, expected {across}")
    inner = s["inner_steps"] - warmup
    inside = 0 if len(mine) == 1 else inner * 4 * numel + sum(
        4 * slice_numel(ex.numel, groups, R) * ex.exchanges for ex in diloco._fragments)
    c.check(s["island_steps"] == (0 if len(mine) == 1 else inner), f"{label}: island steps {s}")
    c.check(s["island_bytes"] == inside, f"{label}: bytes inside the island {s}, expected {inside}")


def reference_case(label: str, steps: int, H: int, frags: List[List[str]], delay: int, mix: float,
                   warmup: int = 0) -> None:
    model = base.mlp(100 + R)
    opt = torch.optim.AdamW(model.parameters(), lr=0.05)
    diloco = DiLoCo(model, opt, sync_every=H, fragments=frags, delay=delay, mix=mix, warmup_steps=warmup,
                    islands=ISLANDS, name=label)
    groups = groups_of(diloco)
    for t in range(1, steps + 1):
        base.inner_step(model, R, t)
        diloco.step()
        opt.zero_grad()
        c.check(island_identical(model, groups, f"{label}.{t}"), f"{label}: an island's ranks differ after step {t}")
    diloco.finish()
    ref = dict(base.simulate(steps, H, frags, delay, mix, warmup, groups)[R].named_parameters())
    for k, p in model.named_parameters():
        err = (p.detach() - ref[k].detach()).abs().max().item()
        c.check(err < 2e-5, f"{label}: {k} differs from the reference by {err}")
    c.check(base.identical(model), f"{label}: ranks ended with different weights")
    s = diloco.stats()
    c.check(s["workers"] == len(groups) and s["outer_lr"] == base.default_outer_lr(len(groups)),
            f"{label}: an island is one worker: M and the outer lr {s}")
    check_bytes(label, diloco, model, groups, warmup)
    if R == 0:
        print(f"ISLANDS {label} {groups}: {diloco.stats()}", flush=True)


def reference() -> None:
    everything = [[n for n, _ in base.mlp(0).named_parameters()]]
    reference_case("plain", 7, 3, everything, 0, 0.0)
    reference_case("streaming", 10, 4, [["0.weight", "0.bias"], ["2.weight", "2.bias"]], 1, 0.5)
    reference_case("warm-up", 11, 3, everything, 0, 0.0, warmup=4)


# ---- training with each codec, checkpoints -------------------------------------------------------

def slice_wire_bytes(m: int, compression: str) -> int:
    """Bytes one exchange of a slice of `m` elements hands to the engine (docs/lowcomm.md's formats)."""
    if m == 0:
        return 0
    if compression in ("none", "topk"):  # top-k: the engine gets the dense float32 slice
        return 4 * m
    if compression == "bf16":
        return 2 * m
    if compression.startswith("sparseloco:"):
        return base.sparse_bytes(m, compression)
    bits, chunk = (int(v) for v in compression[3:].split(":"))
    chunks = -(-m // chunk)
    return chunks * chunk * bits // 8 + 2 * chunks


def train_case(compression: str, fragments: int, outer=None) -> Dict[str, float]:
    """diloco_worker.train_case with islands: the loss falls, every rank ends identical, the slice's bytes cross."""
    torch.manual_seed(7)
    teacher = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    x = torch.randn(256, 16, generator=torch.Generator().manual_seed(50 + R))
    x_eval = torch.randn(256, 16, generator=torch.Generator().manual_seed(999))
    with torch.no_grad():
        y, y_eval = teacher(x), teacher(x_eval)
    torch.manual_seed(R)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    diloco = DiLoCo(model, opt, sync_every=10, fragments=fragments, compression=compression, islands=ISLANDS,
                    outer_optimizer=outer)
    groups = groups_of(diloco)
    with torch.no_grad():
        before = torch.nn.functional.mse_loss(model(x_eval), y_eval).item()
    label = f"{compression} x{fragments}"
    for t in range(80):
        rows = slice((t * 32) % 256, (t * 32) % 256 + 32)
        torch.nn.functional.mse_loss(model(x[rows]), y[rows]).backward()
        diloco.step()
        opt.zero_grad()
        if t % 10 == 9:
            c.check(island_identical(model, groups, f"{label}.{t}"), f"{label}: an island's ranks differ at {t}")
    diloco.finish()
    with torch.no_grad():
        after = torch.nn.functional.mse_loss(model(x_eval), y_eval).item()
    c.check(after < 0.5 * before, f"{label}: eval loss {before:.4f} -> {after:.4f}")
    c.check(base.identical(model), f"{label}: ranks ended with different weights")
    s = diloco.stats()
    want = sum(slice_wire_bytes(slice_numel(ex.numel, groups, R), compression) * ex.exchanges
               for ex in diloco._fragments)
    c.check(s["wire_bytes"] == want, f"{label}: {s['wire_bytes']} bytes handed across islands, expected {want}")
    if R == 0:
        print(f"TRAIN islands {groups} {label}: loss {before:.4f} -> {after:.4f}, {s}", flush=True)
    return s


def train() -> None:
    for spec, frags in (("none", 1), ("bf16", 1), ("int8:64", 1), ("int4:64", 1), ("int4:64", 2)):
        train_case(spec, frags)
    train_case("sparseloco:0.25:64", 1, outer=lambda params: torch.optim.SGD(params, lr=1.0))


def topk() -> None:
    """The engine's top-k (LIGHT_TOPK_ALLREDUCE=1 from the test) compresses each lane's slice, and it trains."""
    from lightcc.common.native import core

    before = core().stats()["topk_batches"]
    s = train_case("topk", 1, outer=lambda params: torch.optim.SGD(params, lr=1.0))
    # one host: only top-k posts on links. The island's gradients must stay dense (shared memory, not counted)
    c.check(0 < s["engine_bytes_sent"] < s["wire_bytes"], f"topk: {s['engine_bytes_sent']} bytes on links")
    c.check(core().stats()["topk_batches"] > before, "topk: the engine ran no top-k batch")


def checkpoint() -> None:
    """Streaming int8 with islands saved at step 6 (an exchange in flight) resumes bit-identical."""
    straight = base.straight_run(islands=ISLANDS)
    model, opt, diloco = base.fresh_streaming(islands=ISLANDS)
    base.run_steps(model, opt, diloco, 1, 6)
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "diloco": diloco.state_dict()}, buf)
    buf.seek(0)
    saved = torch.load(buf)
    model, opt, diloco = base.fresh_streaming(islands=ISLANDS)
    model.load_state_dict(saved["model"])
    opt.load_state_dict(saved["opt"])
    diloco.load_state_dict(saved["diloco"])
    base.run_steps(model, opt, diloco, 7, 11)
    diloco.finish()
    same = all(torch.equal(a, b.detach()) for a, b in zip(straight, model.parameters()))
    c.check(same, "checkpoint: the resumed run differs from the straight one")
    c.check(base.identical(model), "checkpoint: ranks ended with different weights")
    _, _, other = base.fresh_streaming()  # the same settings without islands
    try:
        other.load_state_dict(saved["diloco"])
        c.check(False, "checkpoint: a state saved with islands loaded into a DiLoCo without them")
    except ValueError as err:
        c.check("islands" in str(err), f"checkpoint: {err}")


# ---- bad islands -----------------------------------------------------------------------------------

def bad() -> None:
    last = N - 1

    def make(islands):
        model = base.mlp(1)
        return lambda: DiLoCo(model, torch.optim.SGD(model.parameters(), lr=0.1), sync_every=4, islands=islands)

    others = list(range(1, N))
    base.expect_error("rank missing", make([others]), "islands: rank 0 is in no island", "rank 0:")
    base.expect_error("rank twice", make([[0, 1], list(range(1, N))]), "islands: rank 1 is in island 0 and again "
                      "in island 1")
    base.expect_error("out of range", make([list(range(N + 1))]), f"names {N}", f"[0, {N})")
    base.expect_error("not lists", make("hosts"), "islands must be None, 'host'")
    base.expect_error("empty island", make([list(range(N)), []]), "island 1 must be a non-empty list")
    if R != last:
        base.os.environ["LIGHTCC_TEST_SOME_RANKS"] = f"island{R % 2}"
    base.expect_error("label unset on a rank", make("env:LIGHTCC_TEST_SOME_RANKS"),
                      f"LIGHTCC_TEST_SOME_RANKS is not set (or empty) on rank {last};")
    differ = [[r] for r in range(N)] if R == last else [list(range(N))]
    base.expect_error("islands differ", make(differ), "islands is", f"on rank {last}")
    base.expect_error("none on one rank", make(None if R == last else [list(range(N))]), "islands is",
                      f"rank {last}")
    model = base.mlp(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    diloco = DiLoCo(model, opt, sync_every=2, compression="int8", islands=ISLANDS)
    base.run_steps(model, opt, diloco, 1, 3)
    diloco.finish()
    c.check(base.identical(model), "after the bad islands, a valid DiLoCo ends with identical weights")


def named() -> None:
    """islands='host' groups the ranks by their host ids, 'env:VAR' by VAR's value (the test sets both per rank)."""
    model = base.mlp(1)
    diloco = DiLoCo(model, torch.optim.SGD(model.parameters(), lr=0.1), sync_every=2, islands=ISLANDS)
    var = "LIGHTCC_HOSTNAME" if ISLANDS == "host" else ISLANDS[len("env:"):]
    labels = allgather_object(base.os.environ[var], name="labels")
    expected = sorted(([r for r in range(N) if labels[r] == v] for v in set(labels)), key=lambda g: g[0])
    c.check(groups_of(diloco) == expected, f"{ISLANDS} islands {groups_of(diloco)}, expected {expected}")


def elastic() -> None:
    """Named islands under the elastic handler: rollbacks, re-formations (the hosts found again, new process
    sets) and re-syncs without a failure leave a streaming int8 run bit-identical to the straight one
    (diloco_worker.rolled_back_run); a rank posing as a new worker in an island with members copies its
    island, which stays identical."""
    model, opt, diloco, h = base.rolled_back_run("elastic islands", islands=ISLANDS)
    groups = groups_of(diloco)
    island = next(g for g in groups if R in g)
    c.check(island_identical(model, groups, "elastic"), "elastic islands: an island's ranks differ")
    base.run_steps(model, opt, diloco, 12, 14)
    h.save()
    newcomer = max(max(g) for g in groups if len(g) > 1)
    if R == newcomer:
        diloco._member = False
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(7.0)
        for st in opt.state.values():
            st["exp_avg"].zero_()
    base.recover(h)
    digests = allgather_object(base.digest(model), name="elastic.island.digest")
    c.check(len({digests[r] for r in island}) == 1, "elastic islands: the new worker did not copy its island")
    inner = allgather_object(sorted((k, float(v["exp_avg"].sum())) for k, v in opt.state_dict()["state"].items()),
                             name="elastic.island.inner")
    c.check(len({str(inner[r]) for r in island}) == 1, "elastic islands: the new worker's inner state differs")
    base.run_steps(model, opt, diloco, 15, 17)
    diloco.finish()
    c.check(base.identical(model), "elastic islands: ranks ended with different weights")
    try:
        DiLoCo(model, opt, sync_every=4, islands=[[r] for r in range(N)]).elastic_state_handler()
        c.check(False, "elastic islands: islands as lists of ranks were taken")
    except ValueError as err:
        c.check("islands=None, 'host' or 'env:VARIABLE', not lists" in str(err), f"elastic islands: {err}")


if __name__ == "__main__":
    torch.set_num_threads(1)  # ranks share a few cores
    base.start()
    for mode in base.MODE.split(","):
        {"reference": reference, "train": train, "checkpoint": checkpoint, "bad": bad, "named": named,
         "topk": topk, "elastic": elastic}[mode]()
    c.finish()
