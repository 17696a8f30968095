"""Runs lightcc.torch.DiLoCo on real ranks: against a one-process reference, training with each codec, bad input.

argv: INIT MODES. INIT is ``hvd`` (lightcc.torch.init()) or ``c10d:PORT`` (dist.init_process_group("lightcc")
with torch's TCPStore on PORT). MODES is a comma list (one process start runs several) of

- ``reference``: plain DiLoCo (H=3, 7 steps), Streaming DiLoCo (2 fragments, H=4, delay 1, mix 0.5,
  10 steps), and both after a data-parallel warm-up (``warmup_steps``), on a small MLP with fixed
  per-rank data; each rank's weights after `finish()` must equal a reference computed in this
  process by simulating every rank (mean gradient in the warm-up, mean pseudo-gradient, Nesterov SGD
  written out), and the counted bytes must be what the exchanges handed over;
- ``train``: a teacher-student regression under each codec (none, bf16, int8, int4, fp8, e3m0, sparseloco) and streaming
  with int4: the loss must fall to under half and every rank must end with identical weights;
- ``topk``: the same regression with the engine's top-k as the codec (the test starts the engine with
  LIGHT_TOPK_ALLREDUCE=1): it trains, ranks stay identical, the engine ran top-k batches;
- ``checkpoint``: a streaming int8 run saved mid-exchange and resumed in fresh objects ends bit-identical
  to the run that never stopped;
- ``elastic``: the elastic handler's rollback and re-sync (and a re-formation for new hosts), without a
  failure, leave a streaming int8 run bit-identical; a rank posing as a new worker takes the shared
  weights and rank 0's optimizer states; one joining with other settings fails on every rank;
- ``bad``: each bad input raises ValueError on every rank, naming the rank and the parameter; then a
  valid DiLoCo still runs (nothing left hanging in the engine).
"""
from __future__ import annotations

import hashlib
import math
import os
import sys
from datetime import timedelta
from typing import Dict, List, Optional

import torch
from torch_helpers import checker

import lightcc.torch as hvd
from lightcc.torch import DiLoCo
from lightcc.torch.lowcomm.diloco import OUTER_MOMENTUM as MU, default_outer_lr  # the default outer step's settings

R, N = int(os.environ["LIGHTCC_RANK"]), int(os.environ["LIGHTCC_SIZE"])
INIT, MODE = sys.argv[1], sys.argv[2]
c = checker()


def start() -> None:
    if INIT == "hvd":
        hvd.init()
    else:
        import torch.distributed as dist

        dist.init_process_group("lightcc", init_method=f"tcp://127.0.0.1:{INIT.split(':')[1]}", rank=R, world_size=N,
                                timeout=timedelta(seconds=60))


def mlp(seed: int, hidden: int = 6, dtype: torch.dtype = torch.float32) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 2)).to(dtype)


def batch(rank: int, t: int):
    g = torch.Generator().manual_seed(1000 * rank + t)
    return torch.randn(8, 4, generator=g), torch.randn(8, 2, generator=g)


def inner_step(model: torch.nn.Module, rank: int, t: int) -> None:
    x, y = batch(rank, t)
    torch.nn.functional.mse_loss(model(x), y).backward()


def digest(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()


def identical(model: torch.nn.Module) -> bool:
    return len(set(hvd.allgather_object(digest(model), name="digest"))) == 1


# ---- the one-process reference: every rank simulated, the outer step written out ------------

def simulate(steps: int, H: int, frags: List[List[str]], delay: int, mix: float, warmup: int = 0,
             groups: Optional[List[List[int]]] = None, ranks: Optional[List[int]] = None) -> List[torch.nn.Module]:
    """Every rank of DiLoCo simulated in one process, the outer step written out: the reference.

    `ranks` are the global ranks DiLoCo runs on (a process set's; default every rank), whose first
    rank's init every rank starts from; the result and `groups` index them by position. `groups` are
    islands (default: every rank alone): after the warm-up each inner step averages the gradients over
    the island. The outer average is per rank: island i weighs s_i / n, and its s_i ranks hold the same
    pseudo-gradient, so the weighted mean over islands is the plain mean over ranks.
    """
    ranks = ranks or list(range(N))
    n = len(ranks)
    groups = groups or [[i] for i in range(n)]
    lr = 0.7 if len(groups) <= 2 else 0.85 if len(groups) == 3 else 1.0  # the default's for M workers (docs)
    models = [mlp(100 + ranks[0]) for _ in range(n)]
    opts = [torch.optim.AdamW(m.parameters(), lr=0.05) for m in models]
    params = [dict(m.named_parameters()) for m in models]
    momentum: Dict[str, torch.Tensor] = {}
    pending: Dict[int, tuple] = {}
    dirty = [False] * len(frags)

    def mean_delta(f: int) -> Dict[str, torch.Tensor]:
        return {k: sum(shared[k] - p[k].detach() for p in params) / n for k in frags[f]}

    @torch.no_grad()
    def outer(f: int, delta: Dict[str, torch.Tensor], a: float) -> None:
        for k in frags[f]:
            buf = momentum[k] = MU * momentum[k] + delta[k] if k in momentum else delta[k].clone()
            shared[k] -= lr * (delta[k] + MU * buf)
            for p in params:
                p[k].copy_(a * p[k] + (1 - a) * shared[k])
        dirty[f] = a > 0

    def dense_step(t: int, sets: List[List[int]]) -> None:
        for i, r in enumerate(ranks):
            inner_step(models[i], r, t)
        for g in sets:
            for k in params[0]:
                mean = sum(params[r][k].grad for r in g) / len(g)
                for r in g:
                    params[r][k].grad = mean.clone()
        for i in range(n):
            opts[i].step()
            opts[i].zero_grad()

    for t in range(1, warmup + 1):
        dense_step(t, [list(range(n))])
    with torch.no_grad():
        shared = {k: v.detach().clone() for k, v in params[0].items()}
    for t in range(warmup + 1, steps + 1):
        dense_step(t, groups)
        dirty[:] = [True] * len(frags)
        for f in [f for f, (due, _) in pending.items() if due <= t]:
            outer(f, pending.pop(f)[1], mix)
        for f in range(len(frags)):
            if (t - warmup) % H == ((f + 1) * H // len(frags)) % H:
                pending[f] = (t + delay, mean_delta(f))
                if delay == 0:
                    outer(f, pending.pop(f)[1], mix)
    for f in list(pending):
        outer(f, pending.pop(f)[1], mix)
    for f in range(len(frags)):
        if dirty[f]:
            outer(f, mean_delta(f), 0.0)
    return models


def reference_case(label: str, steps: int, H: int, frags: List[List[str]], delay: int, mix: float,
                   exchanges: int, warmup: int = 0) -> None:
    model = mlp(100 + R)  # each rank's own init: the constructor must replace it with rank 0's
    opt = torch.optim.AdamW(model.parameters(), lr=0.05)
    diloco = DiLoCo(model, opt, sync_every=H, fragments=frags, delay=delay, mix=mix, warmup_steps=warmup,
                    name=label)
    for t in range(1, steps + 1):
        inner_step(model, R, t)
        diloco.step()
        opt.zero_grad()
        if t == warmup:  # the warm-up is data-parallel: every rank holds the same weights at its end
            c.check(identical(model), f"{label}: ranks differ at the end of the warm-up")
    diloco.finish()
    ref = dict(simulate(steps, H, frags, delay, mix, warmup)[R].named_parameters())
    for k, p in model.named_parameters():
        err = (p.detach() - ref[k].detach()).abs().max().item()
        c.check(err < 2e-5, f"{label}: {k} differs from the reference by {err}")
    c.check(identical(model), f"{label}: ranks ended with different weights")
    s = diloco.stats()
    c.check(s["workers"] == N and s["outer_lr"] == default_outer_lr(N), f"{label}: M and the outer lr {s}")
    c.check(s["outer_exchanges"] == exchanges, f"{label}: {s['outer_exchanges']} exchanges, expected {exchanges}")
    c.check(s["wire_bytes"] == s["dense_bytes"] > 0, f"{label}: uncompressed bytes {s}")
    numel = sum(p.numel() for p in model.parameters())
    c.check(s["warmup_exchanges"] == warmup and s["warmup_bytes"] == 4 * numel * warmup,
            f"{label}: warm-up counts {s}, expected {warmup} allreduces of {4 * numel} bytes")


def reference() -> None:
    everything = [[n for n, _ in mlp(0).named_parameters()]]
    reference_case("plain", 7, 3, everything, 0, 0.0, exchanges=3)  # steps 3, 6 and finish()
    layers = [["0.weight", "0.bias"], ["2.weight", "2.bias"]]
    # f0 starts at 2, 6, 10 (applied at 3, 7, finish), f1 at 4, 8 (applied at 5, 9); finish() then syncs both again
    # (mix 0.5 left local progress in them)
    reference_case("streaming", 10, 4, layers, 1, 0.5, exchanges=7)
    # 4 data-parallel steps, then outer steps at 7 and 10 (H counts from the warm-up's end) and finish() at 11
    reference_case("warm-up", 11, 3, everything, 0, 0.0, exchanges=3, warmup=4)
    # streaming after 3 warm-up steps: f0 starts at 5, 9, 13 (each applied a step later, the last by finish()),
    # f1 at 7, 11; finish() then syncs both again
    reference_case("streaming warm-up", 13, 4, layers, 1, 0.5, exchanges=7, warmup=3)


# ---- training with each codec ------------------------------------------------------------------

def sparse_bytes(n: int, compression: str) -> int:
    """Bytes "sparseloco:DENSITY:CHUNK" hands over for n elements: a row a chunk (Elias-Fano indices: b low bits
    each and k + ceil(chunk / 2^b) high bits; 2-bit codes; two bfloat16 magnitudes)."""
    density, chunk = float(compression.split(":")[1]), int(compression.split(":")[2])
    k = min(chunk - chunk % 4, max(4, 4 * math.ceil(chunk * density / 4)))
    b = int(math.floor(math.log2(chunk / k)))
    return -(-n // chunk) * (math.ceil(k * b / 8) + math.ceil((k + math.ceil(chunk / 2 ** b)) / 8) + k // 4 + 4)


def wire_bytes(diloco: DiLoCo, compression: str) -> int:
    """What each exchange of each fragment must hand to the engine, from the format (docs/lowcomm.md)."""
    total = 0
    for ex in diloco._fragments:
        n = ex.numel
        if compression in ("none", "topk"):  # top-k: the engine gets the dense float32 fragment
            per = 4 * n
        elif compression == "bf16":
            per = 2 * n
        elif compression.startswith("sparseloco:"):
            per = sparse_bytes(n, compression)
            chunks = -(-n // int(compression.split(":")[2]))
            if compression.endswith(":scatter") and N >= 3 and chunks >= N:  # the owned shard's rows again
                per += (chunks // N + (1 if R < chunks % N else 0)) * sparse_bytes(1, compression)
        else:  # int8, int4, fp8 or e3m0 :CHUNK: codes of the padded chunks plus one bfloat16 scale per chunk
            name, chunk_text = compression.split(":")
            bits, chunk = {"int8": 8, "fp8": 8, "int4": 4, "e3m0": 4}[name], int(chunk_text)
            chunks = -(-n // chunk)
            per = chunks * chunk * bits // 8 + 2 * chunks
            if N >= 3 and chunks >= N:  # the reduce-scatter form hands the owned shard's rows again
                owned = chunks // N + (1 if R < chunks % N else 0)
                per += owned * (chunk * bits // 8 + 2)
        total += per * ex.exchanges
    return total


def train_case(compression: str, fragments: int, outer=None) -> None:
    torch.manual_seed(7)
    teacher = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    g = torch.Generator().manual_seed(50 + R)
    x = torch.randn(256, 16, generator=g)
    x_eval = torch.randn(256, 16, generator=torch.Generator().manual_seed(999))
    with torch.no_grad():
        y, y_eval = teacher(x), teacher(x_eval)
    torch.manual_seed(R)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    diloco = DiLoCo(model, opt, sync_every=10, fragments=fragments, compression=compression, outer_optimizer=outer)
    with torch.no_grad():
        before = torch.nn.functional.mse_loss(model(x_eval), y_eval).item()
    for t in range(80):
        rows = slice((t * 32) % 256, (t * 32) % 256 + 32)
        torch.nn.functional.mse_loss(model(x[rows]), y[rows]).backward()
        diloco.step()
        opt.zero_grad()
    diloco.finish()
    with torch.no_grad():
        after = torch.nn.functional.mse_loss(model(x_eval), y_eval).item()
    label = f"{compression} x{fragments}"
    c.check(after < 0.5 * before, f"{label}: eval loss {before:.4f} -> {after:.4f}")
    c.check(identical(model), f"{label}: ranks ended with different weights")
    s = diloco.stats()
    c.check(s["wire_bytes"] == wire_bytes(diloco, compression),
            f"{label}: {s['wire_bytes']} bytes handed to the engine, expected {wire_bytes(diloco, compression)}")
    if R == 0:
        print(f"TRAIN {label}: loss {before:.4f} -> {after:.4f}, {s}", flush=True)


def topk() -> None:
    """The engine's top-k (started with LIGHT_TOPK_ALLREDUCE=1 by the test) compresses the outer step, which trains."""
    from lightcc.common.native import core

    before = core().stats()["topk_batches"]
    # SparseLoCo: error feedback in place of outer momentum (Nesterov's momentum on sparse steps overshoots)
    train_case("topk", 1, outer=lambda params: torch.optim.SGD(params, lr=1.0))
    c.check(core().stats()["topk_batches"] > before, "topk: the engine ran no top-k batch")


def two_phase_run(codec, numel: int, label: str):
    """One exchange of every rank's seeded random vector that must take the reduce-scatter form: (the vectors,
    its handle, its average, the mean of the ranks' decoded vectors summed in rank order as the owners do)."""
    from lightcc.torch.lowcomm.scatter_gather import TwoPhase

    flats = [torch.randn(numel, generator=torch.Generator().manual_seed(k)) for k in range(N)]
    handle = codec.start(codec.encode(flats[R])[0], f"two_phase.{label}")
    c.check(isinstance(handle, TwoPhase), f"{label}: {N} ranks should take the reduce-scatter form")
    got = codec.finish(handle, numel, N)
    total = codec.encode(flats[0])[1].clone()
    for k in range(1, N):
        total += codec.encode(flats[k])[1]
    return flats, handle, got, total / N


def sparse_two_phase_case() -> None:
    """sparseloco with ':scatter' from 3 ranks: each owner's re-selected mean, exactly, and N x its loss fed back."""
    from lightcc.torch.lowcomm.scatter_gather import TwoPhase
    from lightcc.torch.lowcomm.sparse_codec import SparseLowBit

    codec, numel, chunk = SparseLowBit(0.25, 64, scatter=True), 1000, 64
    flats, handle, got, mean = two_phase_run(codec, numel, "sparseloco:scatter")
    want = codec.encode(mean)[1]  # chunks are selected and coded alone: the owners' shards, whole
    c.check(torch.equal(got, want), f"sparseloco:scatter: the average is not the owners' re-coded mean "
                                    f"({(got - want).abs().max().item()})")
    first, values = codec.feedback(handle)
    own = codec.encode(flats[R])[1]
    mine = torch.where(got == 0, own, torch.zeros_like(own))  # what the result dropped of this rank's own
    c.check(first == 0 and torch.equal(values[got == 0], mine[got == 0]), "sparseloco:scatter: a rank's dropped "
            "entries did not go back to its own residual")
    # over the ranks nothing sent is lost: the feedback sums to the decoded contributions minus N x the result
    total_back = hvd.allreduce(values, op=hvd.Sum, name="sparse_two_phase.feedback")
    c.check(torch.allclose(total_back, N * mean - N * got, atol=1e-5),
            f"sparseloco:scatter: feedback sums to {(total_back - N * (mean - got)).abs().max().item()} off")
    chunks = -(-numel // chunk)
    owned = chunks // N + (1 if R < chunks % N else 0)
    c.check(codec.extra_bytes(handle) == owned * codec.row_bytes(),
            f"sparseloco:scatter: step 2 handed {codec.extra_bytes(handle)} bytes, expected {owned} rows")
    plain = SparseLowBit(0.25, 64)
    gathered = plain.start(plain.encode(flats[R])[0], "sparse_gather")
    c.check(not isinstance(gathered, TwoPhase), "sparseloco without ':scatter' should allgather")
    plain.finish(gathered, numel, N)


def two_phase_case(bits: int) -> None:
    """From 3 ranks the quantised codec takes the reduce-scatter form: its average against one computed here."""
    from lightcc.torch.lowcomm.codecs import Quantized

    codec, numel, chunk = Quantized(bits, 64), 1000, 64
    _, handle, got, mean = two_phase_run(codec, numel, f"int{bits}")
    padded = torch.zeros(-(-numel // chunk) * chunk)
    padded[:numel] = mean
    step = padded.view(-1, chunk).abs().amax(dim=1) / codec.levels  # the second quantisation's step per chunk
    err = ((got - mean).abs() - step.repeat_interleave(chunk)[:numel] * 0.51).max().item()
    c.check(err <= 1e-6, f"int{bits}: reduce-scatter average off the decoded mean by more than half a step ({err})")
    rows = hvd.allgather(got[None], name=f"two_phase.{bits}.check")
    c.check(all(torch.equal(rows[0], r) for r in rows), f"int{bits}: ranks got different averages")
    first, values = codec.feedback(handle)
    want = (N * (mean - got))[first:first + values.numel()]
    c.check(torch.allclose(values[:want.numel()], want, atol=1e-5), f"int{bits}: feedback is not N x the owner's loss")
    chunks = -(-numel // chunk)
    owned = chunks // N + (1 if R < chunks % N else 0)
    c.check(codec.extra_bytes(handle) == owned * (chunk * bits // 8 + 2),
            f"int{bits}: step 2 handed {codec.extra_bytes(handle)} bytes, expected {owned} rows")


def train() -> None:
    if N >= 3:
        two_phase_case(8)
        two_phase_case(4)
        sparse_two_phase_case()
        train_case("sparseloco:0.25:64:0.95:scatter", 1, outer=lambda params: torch.optim.SGD(params, lr=1.0))
    for spec in ("none", "bf16", "int8:64", "int4:64", "fp8:64", "e3m0:64"):
        train_case(spec, 1)
    train_case("int4:64", 2)
    # SparseLoCo: a momentum-free outer SGD, the decaying residual in momentum's place
    for frags in (1, 2):
        train_case("sparseloco:0.25:64", frags, outer=lambda params: torch.optim.SGD(params, lr=1.0))
    # Named no outer optimizer, "sparseloco" takes its own: SGD without momentum (sparse_codec.sparse_outer)
    model = mlp(100 + R)
    diloco = DiLoCo(model, torch.optim.AdamW(model.parameters(), lr=1e-2), sync_every=10, compression="sparseloco")
    outer = diloco._fragments[0].outer
    c.check(type(outer) is torch.optim.SGD and outer.defaults["momentum"] == 0 and outer.defaults["lr"] == 2.0,
            f"sparseloco's default outer optimizer: {outer}")


# ---- checkpoints ------------------------------------------------------------------------------

def run_steps(model: torch.nn.Module, opt: torch.optim.Optimizer, diloco: DiLoCo, first: int, last: int) -> None:
    for t in range(first, last + 1):
        inner_step(model, R, t)
        diloco.step()
        opt.zero_grad()


def fresh_streaming(**extra):
    """(model, AdamW, DiLoCo) of the streaming int8 case the checkpoint and elastic modes share (H = 4, 2
    fragments, delay 1, mix 0.5); `extra` adds DiLoCo arguments (islands)."""
    model = mlp(100 + R)
    opt = torch.optim.AdamW(model.parameters(), lr=0.05)
    kw = {"sync_every": 4, "fragments": 2, "delay": 1, "mix": 0.5, "compression": "int8:16", **extra}
    return model, opt, DiLoCo(model, opt, **kw)


def straight_run(**extra) -> List[torch.Tensor]:
    """The weights after 11 steps and `finish()` of `fresh_streaming(**extra)`, never interrupted."""
    model, opt, diloco = fresh_streaming(**extra)
    run_steps(model, opt, diloco, 1, 11)
    diloco.finish()
    return [p.detach().clone() for p in model.parameters()]


def checkpoint() -> None:
    """Streaming int8 DiLoCo saved at step 6 (fragment 0's exchange in flight) and resumed in fresh objects
    ends bit-identical to the run that never stopped."""
    import io

    straight = straight_run()
    model, opt, diloco = fresh_streaming()
    run_steps(model, opt, diloco, 1, 6)
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "diloco": diloco.state_dict()}, buf)
    buf.seek(0)
    saved = torch.load(buf)
    model, opt, diloco = fresh_streaming()
    model.load_state_dict(saved["model"])
    opt.load_state_dict(saved["opt"])
    diloco.load_state_dict(saved["diloco"])
    run_steps(model, opt, diloco, 7, 11)
    diloco.finish()
    same = all(torch.equal(a, b.detach()) for a, b in zip(straight, model.parameters()))
    c.check(same, "checkpoint: the resumed run differs from the straight one")
    c.check(identical(model), "checkpoint: ranks ended with different weights")
    other = mlp(1)
    wrong = DiLoCo(other, torch.optim.SGD(other.parameters(), lr=0.1), sync_every=5)
    try:
        wrong.load_state_dict(saved["diloco"])
        c.check(False, "checkpoint: loading another DiLoCo's settings did not fail")
    except ValueError as err:
        c.check("sync_every" in str(err), f"checkpoint: {err}")


# ---- elastic rollback ----------------------------------------------------------------------------

def recover(h) -> None:
    """What elastic `run` does to a state handler after a failure: restore, re-form, re-sync."""
    h.restore()
    h.reset()
    h.sync()


def rolled_back_run(label: str, **islands):
    """A streaming int8 run (H = 4, 2 fragments, delay 1) interrupted three times without a failure must end
    bit-identical to the straight run: rolled back after starting an exchange (step 8 re-run), after
    committing with one in flight (started again in sync), and re-formed for new hosts without a restore.
    Returns (model, inner optimizer, DiLoCo, its elastic handler) after `finish()`."""
    straight = straight_run(**islands)
    model, opt, diloco = fresh_streaming(**islands)
    h = diloco.elastic_state_handler()
    h.sync()  # the job's start: every rank new, nothing exchanged
    run_steps(model, opt, diloco, 1, 7)
    h.save()
    run_steps(model, opt, diloco, 8, 8)  # fragment 1's exchange starts after step 8, then a "failure"
    recover(h)
    run_steps(model, opt, diloco, 8, 8)  # the re-run: no inner step, the exchange starts again
    h.save()
    recover(h)  # committed with fragment 1's exchange in flight: sync starts it again
    run_steps(model, opt, diloco, 9, 10)
    h.save()
    h.reset()  # new hosts seen at a commit: a re-formation without a failure (no restore)
    h.sync()  # fragment 0's exchange, started after step 10, starts again
    run_steps(model, opt, diloco, 11, 11)
    diloco.finish()
    same = all(torch.equal(a, b.detach()) for a, b in zip(straight, model.parameters()))
    c.check(same, f"{label}: the run re-formed three times differs from the straight one")
    return model, opt, diloco, h


def elastic() -> None:
    """The elastic handler's restore, reset and sync without a failure change nothing (rolled_back_run); a
    rank posing as a new worker takes the shared weights and rank 0's optimizer states, and every rank
    still ends identical; one joining with other settings fails on every rank."""
    model, opt, diloco, h = rolled_back_run("elastic")
    st = diloco.stats()
    c.check((st["inner_taken"], st["recoveries"], st["redone_exchanges"]) == (11, 3, 2), f"elastic: stats {st}")
    # A new worker (rank N - 1 poses as one): it takes θ and rank 0's optimizer states.
    run_steps(model, opt, diloco, 12, 14)  # fragment 1's exchange after step 12 applied; 14: fragment 0's in flight
    h.save()
    if R == N - 1:
        diloco._member = False
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(7.0)
    recover(h)
    shared = diloco.shared_weights()
    if R == N - 1:
        c.check(all(torch.equal(p.detach(), s) for p, s in zip(model.parameters(), shared)),
                "elastic: the new worker's weights are not the shared ones")
    inner = hvd.allgather_object(sorted((k, float(v["exp_avg"].sum())) for k, v in opt.state_dict()["state"].items()),
                                 name="elastic.inner")
    c.check(inner[N - 1] == inner[0], "elastic: the new worker did not take rank 0's inner optimizer state")
    run_steps(model, opt, diloco, 15, 17)
    diloco.finish()
    c.check(identical(model), "elastic: ranks ended with different weights after a worker joined")
    st = diloco.stats()
    c.check(st["redone_exchanges"] == 3, f"elastic: the exchange in flight when the worker joined: {st}")
    c.check(st["inner_taken"] == 17, f"elastic: inner steps after the join: {st}")
    # A worker that joins with another DiLoCo: every rank raises, naming it, and nothing is left waiting.
    settings = diloco._settings
    if R == N - 1:
        diloco._settings = (99,) + settings[1:]
    try:
        h.sync()
        c.check(False, "elastic: a worker with another sync_every joined")
    except ValueError as err:
        text = str(err)
        c.check(f"rank {N - 1} joined with another DiLoCo" in text and "sync_every is 4 on rank 0 but 99" in text,
                f"elastic: {text}")
    diloco._settings = settings
    c.check(identical(model), "elastic: a collective after the refused join")


# ---- bad input ---------------------------------------------------------------------------------

def expect_error(label: str, build, *needles: str) -> None:
    try:
        build()
    except ValueError as err:
        text = str(err)
        missing = [n for n in (f"on rank {R}", *needles) if n not in text]
        c.check(not missing, f"{label}: the error lacks {missing}: {text}")
        return
    c.check(False, f"{label}: no error")


def bad() -> None:
    last = N - 1

    def make(model=None, opt=None, **kw):
        model = model or mlp(1)
        return lambda: DiLoCo(model, opt or torch.optim.SGD(model.parameters(), lr=0.1), **{"sync_every": 4, **kw})

    expect_error("shape", make(mlp(1, hidden=7 if R == last else 6)), "'0.weight'", f"rank {last}", "[7, 4]")
    expect_error("dtype", make(mlp(1, dtype=torch.float64 if R == last else torch.float32)), "'0.weight'",
                 "float64")
    expect_error("sync_every", make(sync_every=0), "sync_every")
    expect_error("sync_every on one rank", make(sync_every=0 if R == 1 else 4), "rank 1:", "sync_every")
    expect_error("sync_every differs", make(sync_every=5 if R == last else 4), "sync_every", f"rank {last}")
    expect_error("fragment left out", make(fragments=[["0.weight", "2.weight", "2.bias"]]), "'0.bias'",
                 "no fragment")
    expect_error("fragment twice", make(fragments=[["0.weight", "0.bias"], ["0.bias", "2.weight", "2.bias"]]),
                 "'0.bias'", "fragment 0 and again in fragment 1")
    model = mlp(1)
    expect_error("optimizer lacks one", make(model, torch.optim.SGD(list(model.parameters())[:3], lr=0.1)),
                 "'2.bias'", "does not own")
    expect_error("optimizer of another model", make(model, torch.optim.SGD(mlp(2).parameters(), lr=0.1)),
                 "'0.weight'")
    expect_error("compression", make(compression="int3"), "cannot parse compression spec 'int3'")
    expect_error("warmup_steps", make(warmup_steps=-1), "warmup_steps")
    expect_error("warmup_steps differs", make(warmup_steps=3 if R == last else 0), "warmup_steps", f"rank {last}")
    expect_error("top-k off in the engine", make(compression="topk"), "LIGHT_TOPK_ALLREDUCE=1")
    expect_error("outer optimizer", make(outer_optimizer=lambda ps: torch.optim.SGD(mlp(3).parameters(), lr=1)),
                 "outer_optimizer")
    model = mlp(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    diloco = DiLoCo(model, opt, sync_every=2, compression="int8")
    for t in range(1, 4):
        inner_step(model, R, t)
        diloco.step()
        opt.zero_grad()
    diloco.finish()
    c.check(identical(model), "after the bad inputs, a valid DiLoCo ends with identical weights")


if __name__ == "__main__":
    torch.set_num_threads(1)  # ranks share a few cores
    start()
    for mode in MODE.split(","):
        {"reference": reference, "train": train, "bad": bad, "topk": topk, "checkpoint": checkpoint,
         "elastic": elastic}[mode]()
    c.finish()
