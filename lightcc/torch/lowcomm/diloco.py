"""`DiLoCo`: local inner steps, and every H steps (per fragment) an outer step over lightcc's engine.

The story of one training step (`DiLoCo.step`), after the data-parallel warm-up if one was asked
for (`warmup_steps`: the gradients averaged over the ranks before each inner step, no outer step):

1. the inner optimizer steps this rank's model on its own gradients (its state never travels), or,
   with islands (islands.py), on the gradients averaged over its island;
2. each fragment whose exchange was started `delay` steps ago waits for it, steps the shared
   weights with the outer optimizer and merges them into the model (exchange.py);
3. each fragment whose turn it is (step ≡ offset mod H, fragments.py) encodes its pseudo-gradient
   (codecs.py) and starts its exchange on the engine; with delay 0 it is finished at once.

Every rank calls `step()` the same number of times and `finish()` at the end, so every rank makes
the same collectives in the same order. The constructor's checks (checks.py) agree across ranks
before anything else is exchanged.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import torch

from lightcc.common.basics import is_initialized, local_size, rank
from lightcc.common.native import core
from lightcc.common.process_sets import ProcessSet, global_process_set
from lightcc.torch import mpi_ops as M
from lightcc.torch.c10d.group import LightccProcessGroup
from lightcc.torch.lowcomm import checks
from lightcc.torch.lowcomm import fragments as _frag
from lightcc.torch.lowcomm.codecs import OuterCompression
from lightcc.torch.lowcomm.compression_specs import parse_compression
from lightcc.torch.lowcomm.exchange import FragmentExchange, OuterFactory
from lightcc.torch.lowcomm.islands import IslandSpec, Islands, check_spec, is_named, named_groups

_instances = itertools.count()
_LABELS = checks.LABELS


# The default outer step: the papers' Nesterov SGD with momentum 0.5 instead of their 0.9, at an lr that
# grows with the number of DiLoCo workers M (an island counts once). At H = 50 successive pseudo-gradients
# point much the same way, and 0.9 then steps θ by up to lr / (1 − 0.9) = 7 mean pseudo-gradients; on
# docs/lowcomm.md's 2000-step benchmark that left DiLoCo 10–14 % behind DDP at equal tokens. The DiLoCo
# scaling-law paper (arXiv 2503.09799) finds the best outer lr rising with M; on that benchmark 0.7 did best
# at M = 2 (1.0 worse on two seeds of three) and 1.0 at M = 4 (better than 0.7 on every seed). Between the
# two measured sizes the lr follows a straight line; beyond 4 it is held at 1.0, not extrapolated.
OUTER_LR = 0.7  # at M <= 2
OUTER_LR_MAX = 1.0  # from M = 4 on
OUTER_MOMENTUM = 0.5
PAPERS_OUTER_MOMENTUM = 0.9


def as_process_set(group: Any) -> ProcessSet:
    """A lightcc `ProcessSet` as is, or the process set under a torch.distributed group on lightcc (`dist.new_group`).

    Raises ValueError on this rank for anything else: there are no peers yet to agree with.
    """
    if isinstance(group, ProcessSet):
        return group
    if group is torch.distributed.GroupMember.NON_GROUP_MEMBER:  # what new_group gives the ranks outside it
        raise ValueError(f"lightcc DiLoCo on rank {rank()}: rank {rank()} is not in the torch.distributed group "
                         f"passed as process_set (new_group gave it GroupMember.NON_GROUP_MEMBER)")
    if isinstance(group, LightccProcessGroup):
        if group.process_set_id == 0:
            return global_process_set
        ps = ProcessSet(torch.distributed.get_process_group_ranks(group))
        ps.process_set_id = group.process_set_id
        return ps
    if isinstance(group, torch.distributed.ProcessGroup):
        raise ValueError(f"lightcc DiLoCo on rank {rank()}: process_set is a torch.distributed group on "
                         f"{group.name()!r}, not on the lightcc backend")
    raise ValueError(f"lightcc DiLoCo on rank {rank()}: process_set must be a lightcc ProcessSet or a "
                     f"torch.distributed group on lightcc, not {type(group).__name__}")


def _membership(process_set: ProcessSet) -> Tuple[int, int]:
    """(size, this rank's position) of the process set DiLoCo runs on; ValueError on this rank if it has none.

    Raised before any collective: a rank outside the set, or a set not registered, has no peers to agree with.
    """
    try:
        return process_set.size(), process_set.rank()
    except ValueError as err:
        raise ValueError(f"lightcc DiLoCo on rank {rank()}: {err}") from None


def default_outer_lr(workers: int) -> float:
    """The default outer lr for `workers` DiLoCo workers: 0.7 up to 2, 0.85 at 3, 1.0 from 4 on."""
    if workers >= 4:
        return OUTER_LR_MAX
    return OUTER_LR + (OUTER_LR_MAX - OUTER_LR) * max(0, workers - 2) / 2


def nesterov_outer(params: List[torch.Tensor], lr: float = OUTER_LR) -> torch.optim.Optimizer:
    """The default's outer optimizer: SGD, Nesterov momentum 0.5, at `lr` (the default's at 2 workers).

    `DiLoCo` without `outer_optimizer` builds it and keeps its lr at `default_outer_lr` of the number
    of workers (docs/lowcomm.md says why); passed explicitly it keeps the lr it was built with.
    """
    return torch.optim.SGD(params, lr=lr, momentum=OUTER_MOMENTUM, nesterov=True)


def papers_outer(params: List[torch.Tensor]) -> torch.optim.Optimizer:
    """The DiLoCo papers' outer optimizer: SGD, Nesterov momentum 0.9, learning rate 0.7 (tuned at H = 100–500)."""
    return torch.optim.SGD(params, lr=OUTER_LR, momentum=PAPERS_OUTER_MOMENTUM, nesterov=True)


class DiLoCo:
    """DiLoCo (and Streaming DiLoCo with `fragments` > 1) over lightcc's engine, for a model not wrapped in DDP.

    Args:
        model: the model; every rank's must have the same trainable parameters (names, shapes,
            dtypes). The constructor makes them rank 0's (parameters and buffers).
        inner_optimizer: steps the model locally; must own exactly its trainable parameters.
        sync_every: H, inner steps between two outer steps of a fragment (>= 1).
        outer_optimizer: ``params -> torch.optim.Optimizer``, called once per fragment with that
            fragment's shared float32 weights; default `nesterov_outer` (SGD, Nesterov, momentum 0.5)
            at `default_outer_lr` of the number of workers (islands count once: 0.7 up to 2, 1.0 from
            4), followed when an elastic job grows or shrinks (`papers_outer` has the papers' lr 0.7
            and momentum 0.9), or the codec's own (``"sparseloco"``:
            `sparse_outer`, SGD without momentum, whose place the codec's decaying residual takes).
        fragments: an int F (contiguous runs of parameters of about equal size) or lists of
            parameters or names covering each trainable parameter once. Fragment f syncs at
            steps t with t % H == ((f + 1) * H // F) % H.
        delay: τ, inner steps an exchange overlaps before its result is applied, in [0, H);
            default 0 with one fragment, 2 with several (1 when H = 2).
        mix: α of the merge local ← α·local + (1 − α)·shared after an outer step; default 0
            (restart from the shared weights) when delay is 0, else 0.5.
        compression: outer-gradient codec or spec ("none", "bf16", "fp16", "int8[:CHUNK]",
            "int4[:CHUNK]", "fp8[:CHUNK]" (E4M3), "e3m0[:CHUNK]" (4 bits: a sign and an exponent),
            "topk": the engine's top-k, which needs LIGHT_TOPK_ALLREDUCE=1,
            "sparseloco[:DENSITY[:CHUNK[:DECAY]]]": SparseLoCo's top-k with 2-bit values, which
            brings its own momentum-free outer SGD); lossy codecs keep an error-feedback residual on each rank
            (top-k's lives in the engine).
        warmup_steps: W, inner steps trained data-parallel first (gradients averaged over the ranks
            before each inner step, one allreduce per step); outer steps start H steps after them.
        islands: None (every rank its own DiLoCo worker), ``"host"`` (the ranks of each host),
            ``"env:VAR"`` (the ranks whose environment variable VAR has the same value: a region, a
            rack) or lists of ranks partitioning the job, the same on every rank. An island's ranks average
            their gradients at every inner step (dense data parallelism over its process set) and
            DiLoCo runs between the islands: each island's pseudo-gradient crosses between islands
            once, sharded over its ranks, weighted by the island's rank count (islands.py).
        process_set: the ranks this DiLoCo runs on, a registered `ProcessSet` or a torch.distributed
            group on lightcc (`dist.new_group`) this rank is in; default every rank. Its collectives
            stay inside the set and rank 0's part falls to the set's lowest rank, so disjoint sets
            train separate DiLoCos at once (a tensor-parallel shard's replicas, say). Islands given
            as lists name global ranks, partitioning the set's. Not under elastic training.
        name: prefix of the engine's tensor names; default counts instances (build them in the
            same order on every rank) and names the process set.

    Raises:
        ValueError: on every rank alike, naming the rank and the parameter, for bad input.
        RuntimeError: lightcc is not initialised.
    """

    def __init__(self, model: torch.nn.Module, inner_optimizer: torch.optim.Optimizer, sync_every: int, *,
                 outer_optimizer: Optional[OuterFactory] = None,
                 fragments: _frag.FragmentSpec = 1, delay: Optional[int] = None, mix: Optional[float] = None,
                 compression: Union[str, OuterCompression, None] = None, warmup_steps: int = 0,
                 islands: IslandSpec = None, process_set: Any = global_process_set,
                 name: Optional[str] = None) -> None:
        if not is_initialized():
            raise RuntimeError("lightcc DiLoCo: lightcc is not initialised; call lightcc.torch.init() or "
                               "dist.init_process_group('lightcc') first")
        self.model, self.inner_optimizer = model, inner_optimizer
        self.sync_every = sync_every
        self.warmup_steps = warmup_steps
        self.process_set = process_set = as_process_set(process_set)
        self._size, self._me = _membership(process_set)
        whole = process_set.process_set_id == 0
        self.name = name if name is not None else (
            f"diloco{next(_instances)}" + ("" if whole else f".set{process_set.process_set_id}"))
        self._steps = 0
        # Inner steps this rank's optimizer really took, and the step count they reached: after an
        # elastic rollback (elastic_diloco.py) a re-run step below it skips the inner step it took.
        self._taken = 0
        self._high = 0
        self._member = False  # has trained in this job (elastic_diloco.py: a new worker is not)
        self._recoveries = 0
        self._redone = 0
        self._engine_prior = 0  # bytes counted by engines before the last re-formation
        self._fragments: List[FragmentExchange] = []
        self._warmup_exchanges = 0
        self._warmup_bytes = 0
        self._island_steps = 0
        self._island_bytes = 0
        self._dirty: List[bool] = []
        self._default_outer = False  # the outer optimizer is the default's, whose lr follows M (_follow_workers)
        self._islands = Islands.alone(self._size, self._me, process_set)
        problem, sig = None, None
        try:
            sig = self._build(outer_optimizer, fragments, delay, mix, compression, islands)
        except Exception as err:  # noqa: BLE001  (any local failure is shared before raising, or peers hang)
            problem = str(err) if isinstance(err, ValueError) else f"{type(err).__name__}: {err}"
        checks.agree(problem, sig, _LABELS, self.name, process_set)
        self._form_islands()
        self._follow_workers()
        self._start_from_rank0()
        self._engine_bytes = int(core().stats()["bytes_sent"])

    def _build(self, make_outer: Optional[OuterFactory], spec: _frag.FragmentSpec, delay: Optional[int],
               mix: Optional[float], compression: Union[str, OuterCompression, None],
               islands: IslandSpec) -> checks.Signature:
        """Check the arguments on this rank and build the fragments; returns the signature to agree on."""
        named = checks.trainable(self.model)
        checks.check_optimizer(named, self.inner_optimizer)
        codec = parse_compression(compression)
        self._default_outer = make_outer is None and codec.default_outer is None
        make_outer = make_outer or codec.default_outer or nesterov_outer
        parts = _frag.build(named, spec)
        self.delay = checks.default_delay(len(parts), self.sync_every) if delay is None else delay
        self.mix = (0.0 if self.delay == 0 else 0.5) if mix is None else float(mix)
        checks.check_settings(self.sync_every, self.delay, self.mix, len(parts))
        checks.check_warmup(self.warmup_steps)
        self.islands = check_spec(islands, self._size, self.process_set.ranks)
        for f, part in enumerate(parts):
            ex = FragmentExchange(part, make_outer, codec, f"{self.name}.f{f}", self._islands)
            ex.check_outer()
            ex.offset = _frag.offset(f, len(parts), self.sync_every)
            self._fragments.append(ex)
        self._dirty = [False] * len(parts)
        self.compression = codec
        self._settings = (self.sync_every, self.delay, self.mix, codec.spec, [ex.names for ex in self._fragments],
                          self.warmup_steps, self.islands)
        return checks.signature(self._settings, named)

    def _form_islands(self) -> None:
        """After the agreement: find the islands, cut each fragment into its slices, make the process sets.

        Every rank has the same islands argument by now and the groups come from data every rank
        shares, so a fragment too small to cut fails alike on every rank, before any set is made.
        """
        if self.islands is None:
            return
        job = self.process_set
        try:
            if is_named(self.islands):
                groups = named_groups(self.islands, local_size(), self.name, job)
            else:  # global ranks to positions in the set
                groups = [[job.ranks.index(r) for r in g] for g in self.islands]
            layout = Islands(groups, self._me)
            for ex in self._fragments:
                ex.place(layout)
        except ValueError as err:
            raise ValueError(f"lightcc DiLoCo on rank {rank()}: {err}") from None
        self._islands = Islands(groups, self._me, self.name, job)  # now with its process sets
        for ex in self._fragments:
            ex.place(self._islands)

    @torch.no_grad()
    def _start_from_rank0(self) -> None:
        """Every rank takes the set's first rank's parameters and buffers; the shared weights start from them."""
        root = self.process_set.ranks[0]
        handles = [M.broadcast_async_(t, root, name=f"{self.name}.init.{key}", process_set=self.process_set)
                   for key, t in self.model.state_dict(keep_vars=False).items() if isinstance(t, torch.Tensor)]
        for h in handles:
            M.synchronize(h)
        for ex in self._fragments:
            ex.reset()

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """The inner optimizer's step, then any outer step due at this step; returns the inner step's result.

        During the first `warmup_steps` steps the gradients are averaged over the ranks before the
        inner step (data-parallel training), and no outer step is taken. With islands of more than
        one rank, every later inner step averages the gradients over the island first.
        """
        if self._steps < self.warmup_steps:
            return self._warmup_step(closure)
        if self._islands.dense_inside:
            result, handed = self._dense_step(closure, self._islands.island_set, f"{self.name}.island")
            self._island_steps += 1
            self._island_bytes += handed
        elif self._steps < self._high:  # taken before a failure rolled the count back (elastic_diloco.py)
            result = closure() if closure is not None else None
        else:
            result = self.inner_optimizer.step(closure) if closure is not None else self.inner_optimizer.step()
            self._taken += 1
        self._steps += 1
        self._high = max(self._high, self._steps)
        self._dirty = [True] * len(self._fragments)
        for ex in self._fragments:
            ex.progress()
        for f, ex in enumerate(self._fragments):
            if ex.pending and self._steps >= ex.due:
                self._apply(f, self.mix)
        for f, ex in enumerate(self._fragments):
            # periods count from the warm-up's end, so the first outer step comes H steps after it
            if (self._steps - self.warmup_steps) % self.sync_every == ex.offset:
                ex.start(self._steps + self.delay, at=self._steps)
                if self.delay == 0:
                    self._apply(f, self.mix)
        return result

    def _warmup_step(self, closure: Optional[Callable[[], Any]]) -> Any:
        """One data-parallel step over every rank; at the warm-up's end the shared weights are the local ones.

        Every rank holds the same weights and the same inner-optimizer state afterwards (the same
        inputs give the same outputs), so the shared weights are just the local ones at the end.
        """
        loss, handed = self._dense_step(closure, self.process_set, f"{self.name}.warmup")
        self._warmup_exchanges += 1
        self._warmup_bytes += handed
        self._steps += 1
        self._high = max(self._high, self._steps)
        if self._steps == self.warmup_steps:
            for ex in self._fragments:
                ex.reset()
        return loss

    def _dense_step(self, closure: Optional[Callable[[], Any]], process_set: ProcessSet,
                    name: str) -> Tuple[Any, int]:
        """Average the gradients over `process_set` (one grouped allreduce), then the inner step.

        The warm-up's step over the whole job, and an island's inner step over the island. Returns
        the closure's loss and the gradient bytes handed to the allreduce.
        """
        loss = None
        if closure is not None:  # the closure computes the gradients, which must be averaged before the step
            with torch.enable_grad():
                loss = closure()
        grads = []
        for ex in self._fragments:
            for p in ex.params:
                if p.grad is None:  # a parameter unused this step still takes part, or ranks' groups differ
                    p.grad = torch.zeros_like(p)
                # flat views: the engine's top-k leaves 1-D tensors alone (LIGHT_TOPK_MIN_DIMS=2), so
                # these gradients stay dense when the outer step runs top-k
                grads.append(p.grad.view(-1) if p.grad.is_contiguous() else p.grad)
        M.synchronize(M.grouped_allreduce_async_(grads, name=name, op=M.Average, process_set=process_set))
        if self._steps >= self._high:  # not taken before a failure rolled the count back
            self.inner_optimizer.step()
            self._taken += 1
        return loss, sum(g.numel() * g.element_size() for g in grads)

    def _apply(self, f: int, mix: float) -> None:
        self._fragments[f].finish(mix)
        self._dirty[f] = mix > 0.0

    def finish(self) -> None:
        """End training in step on every rank: apply exchanges in flight, then sync what moved since.

        Afterwards every rank holds the same shared weights. A fragment whose weights have not moved
        since its last outer step (plain DiLoCo after a multiple of H steps) is not exchanged again.
        Call it on every rank (it is collective); training may go on afterwards.
        """
        for f, ex in enumerate(self._fragments):
            if ex.pending:
                self._apply(f, self.mix)
        for f, ex in enumerate(self._fragments):
            if self._dirty[f]:
                ex.start(self._steps, at=self._steps)
                self._apply(f, 0.0)

    def state_dict(self) -> Dict[str, Any]:
        """This rank's outer state: step count, shared weights, outer optimizers, residuals, results not yet applied.

        Collective when an exchange is in flight (it waits for it; the result is applied at its due
        step as usual), so call it on every rank at the same step. Save it per rank, with the model's
        and the inner optimizer's state dicts: local weights and residuals differ between ranks.
        """
        return {"steps": self._steps, "dirty": list(self._dirty), "settings": self._settings,
                "fragments": [ex.state_dict() for ex in self._fragments]}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Restore `state_dict()`'s output of this rank.

        Order on restart: build the model, the inner optimizer and DiLoCo (whose constructor
        broadcasts rank 0's weights), then load the model's and the inner optimizer's state dicts
        and this one, so each rank gets its own local weights back.
        """
        saved = tuple(state["settings"])
        if len(saved) == len(_LABELS) - 1:  # saved before islands existed: it ran without them
            saved += (None,)
        if saved != tuple(self._settings):
            raise ValueError(f"lightcc DiLoCo: the saved settings {state['settings']!r} are not this DiLoCo's "
                             f"{self._settings!r} ({', '.join(_LABELS)})")
        for ex, saved in zip(self._fragments, state["fragments"]):
            ex.load_state_dict(saved)
        self._steps, self._dirty = int(state["steps"]), list(state["dirty"])
        self._high = self._steps
        self._follow_workers()  # a job resumed at another size: the saved lr was the old size's

    def elastic_state_handler(self) -> Any:
        """The handler `lightcc.torch.elastic.TorchState(diloco=this)` commits, restores and syncs it with.

        Survivors of a failure keep their local progress, a lost worker's pseudo-gradient is left out
        of the outer step it missed, and a new worker starts from the shared weights
        (elastic_diloco.py, docs/lowcomm.md "Elastic DiLoCo").
        """
        from lightcc.torch.lowcomm.elastic_diloco import DiLoCoStateHandler

        return DiLoCoStateHandler(self)

    @property
    def workers(self) -> int:
        """M, the number of DiLoCo workers: ranks, or islands when `islands` groups ranks."""
        return len(self._islands.groups)

    @property
    def outer_lr(self) -> float:
        """The outer optimizer's learning rate (its first group's, on the first fragment)."""
        return float(self._fragments[0].outer.param_groups[0]["lr"])

    def _follow_workers(self) -> None:
        """With the default outer optimizer, set its lr to `default_outer_lr(self.workers)`; else nothing.

        The constructor, `load_state_dict` and an elastic re-formation call it; every rank computes
        the same M from the same groups, so the outer steps stay alike.
        """
        if self._default_outer:
            lr = default_outer_lr(self.workers)
            for ex in self._fragments:
                for group in ex.outer.param_groups:
                    group["lr"] = lr

    def shared_weights(self) -> List[torch.Tensor]:
        """The float32 weights every rank last agreed on (θ), fragment by fragment; the same on every rank."""
        return [s for ex in self._fragments for s in ex.shared]

    @property
    def fragments(self) -> List[List[str]]:
        """The parameter names of each fragment, in sync order within a period."""
        return [list(ex.names) for ex in self._fragments]

    def stats(self) -> Dict[str, Union[int, float]]:
        """This rank's counts since construction.

        - ``inner_steps``; ``outer_exchanges``: fragment exchanges started (one per fragment per outer step);
        - ``warmup_exchanges``, ``warmup_bytes``: the gradient allreduces of the data-parallel warm-up
          (`warmup_steps`) and the bytes of the gradients handed to them;
        - ``wire_bytes``: bytes of the tensors this rank handed to the engine for outer steps
          (counted by DiLoCo: the encoded pseudo-gradients, scales included); with islands, only its
          slice, exchanged with the other islands: what crosses between islands;
        - ``dense_bytes``: what those exchanges would have handed over as float32;
        - ``island_steps``, ``island_bytes``: with islands, the inner steps whose gradients were averaged
          inside the island, and the bytes handed to collectives inside the island (those gradients,
          and the float32 averaged slices allgathered after each outer exchange);
        - ``engine_bytes_sent``: the engine's own count of bytes this rank posted on links to other
          hosts since construction, for every collective of the process (dense collectives of ranks on
          one host go through shared memory, which it does not count; top-k's exchange is counted);
        - ``wait_s``: seconds `step`/`finish` spent blocked waiting for outer exchanges;
        - ``inner_taken``: inner optimizer steps this rank took (under elastic `run`, a step re-run
          after a failure does not take its inner step twice); ``recoveries``: re-formations this
          DiLoCo went through; ``redone_exchanges``: outer exchanges started again after one, without
          the workers that were lost (elastic_diloco.py);
        - ``workers``, ``outer_lr``: M and the outer optimizer's lr now (`_follow_workers`).
        """
        return {
            "inner_steps": self._steps,
            "outer_exchanges": sum(ex.exchanges for ex in self._fragments),
            "wire_bytes": sum(ex.wire_bytes for ex in self._fragments),
            "dense_bytes": sum(ex.dense_bytes for ex in self._fragments),
            "engine_bytes_sent": self._engine_prior + int(core().stats()["bytes_sent"]) - self._engine_bytes,
            "wait_s": sum(ex.wait_s for ex in self._fragments),
            "warmup_exchanges": self._warmup_exchanges,
            "warmup_bytes": self._warmup_bytes,
            "island_steps": self._island_steps,
            "island_bytes": self._island_bytes + sum(ex.island_bytes for ex in self._fragments),
            "inner_taken": self._taken,
            "recoveries": self._recoveries,
            "redone_exchanges": self._redone,
            "workers": self.workers,
            "outer_lr": self.outer_lr,
        }
