"""Horovod's ``torch.elastic.state``: TorchState, the StateHandlers that save/restore/sync its objects, and their registry.

TorchState keeps the script's own objects: `state.model`, `state.optimizer` and any keyword whose
type the handler registry names (a module, an optimizer, an ElasticSampler by default) are the
very objects the script holds, saved by value at commit and restored in place; other keywords are
plain picklable attributes. As in Horovod, `set_handler_registry` lets a script add handlers for
its own types, and assigning `state.model = other` hands the new object to its handler. A value
whose type has an `elastic_state_handler` method brings its own handler (`lightcc.torch.DiLoCo`).

A commit's copy overlaps the next step (`TorchState.async_commit`, on by default): `save` copies
the model's buffers and the optimizer's plain values at once, and hands the big in-memory copies
(the model's parameters and the optimizer's state tensors, on the CPU) to one background thread
(`_Copier`; torch's copy releases the GIL), so they run while the next forward and backward
read those tensors. Whatever writes them waits for the copy first: every optimizer's `step` (a
global step pre-hook), and restore, sync, reset and the next commit. The copy reads local memory
only, so it always finishes; a rollback right after `commit()` waits for it and gets exactly the
committed values. Something else writing a parameter in place before the optimizer steps (not
through `optimizer.step`) would race with the copy: the tensors' version counters catch such a
write at the next wait, which then raises rather than keep a torn commit.
"""
from __future__ import annotations

import atexit
import collections
import copy
import os
import queue
import sys
import threading
from typing import Any, Dict, List, Optional, Set, Tuple, Type

import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

from lightcc.common.basics import rank
from lightcc.common.elastic import ObjectState
from lightcc.torch.elastic import live_commit
from lightcc.torch.elastic.reform import move_ddp
from lightcc.torch.elastic.sampler import ElasticSampler
from lightcc.torch.functions import allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters


def snapshot(previous: Any, current: Any, deferred: Optional[List[Tuple[torch.Tensor, torch.Tensor]]] = None) -> Any:
    """A copy of `current` (a state_dict: nested dicts and lists of tensors and plain values) that
    reuses `previous`'s tensors where shape, dtype and device still match.

    A commit every step would otherwise allocate the whole model and optimizer state anew each
    time (fresh pages the kernel must fault in and zero); copying into the last commit's tensors
    is one memory copy. With `deferred` (a list), the copies of CPU tensors are not made but
    appended to it as (target, source) pairs for the caller to make (on the commit thread); the
    returned structure already holds the targets.
    """
    if torch.is_tensor(current):
        source = current.detach()
        reuse = torch.is_tensor(previous) and previous.shape == current.shape and previous.dtype == current.dtype \
            and previous.device == current.device and previous.layout == current.layout == torch.strided
        if deferred is not None and source.device.type == "cpu" and source.layout == torch.strided:
            target = previous if reuse else torch.empty_like(source)
            deferred.append((target, source))
            return target
        return previous.copy_(source) if reuse else source.clone()
    if isinstance(current, dict):
        old = previous if isinstance(previous, dict) else {}
        out = type(current)((k, snapshot(old.get(k), v, deferred)) for k, v in current.items()) \
            if not isinstance(current, collections.OrderedDict) else \
            collections.OrderedDict((k, snapshot(old.get(k), v, deferred)) for k, v in current.items())
        if hasattr(current, "_metadata"):  # a module's state_dict: its modules' versions, for load_state_dict
            out._metadata = current._metadata  # type: ignore[attr-defined]  (state_dict() makes it anew each call)
        return out
    if isinstance(current, list):
        old = previous if isinstance(previous, list) and len(previous) == len(current) else [None] * len(current)
        return [snapshot(o, v, deferred) for o, v in zip(old, current)]
    return copy.deepcopy(current)


class _Copy:
    """One handler's deferred copies, made on the commit thread; `finish` waits for them, `check` also vets them."""

    def __init__(self, pairs: List[Tuple[torch.Tensor, torch.Tensor]], what: str) -> None:
        self.pairs = pairs
        self.what = what
        # In-place writes bump a tensor's version counter (shared by its detached views): a source
        # written before the copy was known done may have been copied half old, half new.
        self.versions = [src._version for _, src in pairs]
        self.done = threading.Event()
        self.error: Optional[BaseException] = None
        self.checked = False
        self.pid = os.getpid()

    def run(self) -> None:
        try:
            torch._foreach_copy_([dst for dst, _ in self.pairs], [src for _, src in self.pairs])
        except BaseException as err:  # noqa: BLE001  (handed to whoever waits)
            self.error = err
        finally:
            self.done.set()

    def finish(self) -> None:
        """Wait until the copy is done (whole or not)."""
        if self.pid != os.getpid() and not self.done.is_set():
            raise RuntimeError(f"lightcc elastic: the process forked while the commit of the {self.what} was being "
                               "copied; that commit is incomplete in the child")
        self.done.wait()

    def check(self) -> None:
        """Wait until the copy is done and raise if it failed or may be torn (every time: a torn commit stays torn)."""
        if self.checked:  # done and whole; later writes are the optimizer's own
            return
        self.finish()
        if self.error is not None:
            raise RuntimeError(f"lightcc elastic: copying the commit of the {self.what} failed") from self.error
        for (_, src), version in zip(self.pairs, self.versions):
            if src._version != version:
                raise RuntimeError(
                    f"lightcc elastic: a tensor of the {self.what} was written in place while commit() was still "
                    "copying it (only optimizer.step() waits for the copy), so the commit may hold a mix of old "
                    "and new values. Write parameters and optimizer state only in optimizer.step() between "
                    "commit() and the next step, or set TorchState.async_commit = False (see docs/elastic.md, "
                    "'What a commit costs').")
        self.checked = True


class _Copier:
    """The commit thread: makes the deferred copies in order; `wait_all` waits for every one in flight.

    One per process (made again in a forked child, which does not inherit the thread). A global
    optimizer step pre-hook waits before any optimizer writes parameters or its state.
    """

    def __init__(self) -> None:
        self._pid = -1
        self._queue: "queue.SimpleQueue[_Copy]" = queue.SimpleQueue()
        self._pending: List[_Copy] = []
        self._hook: Any = None

    def submit(self, pairs: List[Tuple[torch.Tensor, torch.Tensor]], what: str) -> Optional[_Copy]:
        if not pairs:
            return None
        if self._pid != os.getpid():
            self._pid, self._queue, self._pending = os.getpid(), queue.SimpleQueue(), []
            threading.Thread(target=self._serve, args=(self._queue,), name="lightcc-commit", daemon=True).start()
            # A daemon thread still inside a copy while the interpreter tears down can abort the process.
            atexit.register(self.drain)
        if self._hook is None:
            self._hook = register_optimizer_step_pre_hook(lambda *_: self.wait_all())
        job = _Copy(pairs, what)
        self._pending.append(job)
        self._queue.put(job)
        return job

    @staticmethod
    def _serve(jobs: "queue.SimpleQueue[_Copy]") -> None:
        while True:
            jobs.get().run()

    def drain(self) -> None:
        """Wait for the copies in flight without judging them (at exit)."""
        if self._pid == os.getpid():
            for job in self._pending:
                job.done.wait()

    def wait_all(self) -> None:
        """Wait for every copy in flight, then raise the first failure (once; the handler keeps its torn copy)."""
        if not self._pending or self._pid != os.getpid():
            return
        pending, self._pending = self._pending, []
        for job in pending:
            job.finish()
        for job in pending:
            job.check()


_copier = _Copier()


def _finish(job: Optional[_Copy]) -> None:
    if job is not None:
        job.finish()


def _check(job: Optional[_Copy]) -> None:
    if job is not None:
        job.check()


def wait_for_commit() -> None:
    """Wait until every commit copy in flight (`TorchState.async_commit`) is done; raise if one is torn."""
    _copier.wait_all()


class StateHandler:
    """Saves one object of the script by value, puts it back in place, and syncs it from rank 0."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def save(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement save")

    def restore(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement restore")

    def sync(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement sync")

    def set_value(self, value: Any) -> None:
        """The script assigned a new object to the state's attribute: track it and save it."""
        self.value = value
        self.save()

    def reset(self) -> None:
        """The world changed (new rank and size); nothing to do by default."""


class ModelStateHandler(StateHandler):
    """A torch.nn.Module: its state_dict, broadcast from rank 0 on sync."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__(model)
        self.save()

    def save(self, background: bool = False, live: bool = False) -> None:
        """Copy the state_dict; with `background`, the parameters (written only by an optimizer's step)
        on the commit thread. Buffers (BatchNorm's running statistics change in forward) at once. With
        `live`, the parameters are not copied: they are the commit until the next step (live_commit)."""
        _finish(getattr(self, "_copy", None))  # the last commit's copy into the same tensors (replaced now)
        old = getattr(self, "_saved_model_state", None)
        old = old if isinstance(old, dict) else {}
        current = self.value.state_dict(keep_vars=True)
        self.live_tensors = live_commit.parameters(current) if live else []
        deferred: List[Tuple[torch.Tensor, torch.Tensor]] = []
        saved = collections.OrderedDict(
            (k, snapshot(old.get(k), v, deferred if background and isinstance(v, torch.nn.Parameter) else None))
            for k, v in current.items() if not (live and isinstance(v, torch.nn.Parameter)))
        if hasattr(current, "_metadata"):  # the modules' versions, for load_state_dict; made anew by each state_dict()
            saved._metadata = current._metadata  # type: ignore[attr-defined]
        self._saved_model_state = saved
        self._copy = _copier.submit(deferred, "model")

    def restore(self) -> None:
        wait_for_commit()
        _check(getattr(self, "_copy", None))
        # A live commit holds the buffers only: the parameters are as committed unless this rank stepped
        # past the commit (TorchState.sync then takes them from a rank that did not).
        self.value.load_state_dict(self._saved_model_state, strict=not getattr(self, "live_tensors", []))

    def sync(self, root_rank: int = 0) -> None:
        wait_for_commit()
        broadcast_parameters(self.value.state_dict(), root_rank=root_rank)

    def reset(self) -> None:
        """A DistributedDataParallel model moves to torch's new default group."""
        wait_for_commit()
        move_ddp(self.value)


class OptimizerStateHandler(StateHandler):
    """A torch.optim.Optimizer: its state_dict; `model` (TorchState's) names its state tensors on sync."""

    def __init__(self, optimizer: torch.optim.Optimizer, model: Optional[torch.nn.Module] = None) -> None:
        super().__init__(optimizer)
        self.model = model
        self.save()

    def save(self, background: bool = False, live: bool = False) -> None:
        """Copy the state_dict; with `background`, the tensors of its per-parameter state (written only
        by `step`) on the commit thread; param_groups (a scheduler may change them) at once. With `live`,
        the per-parameter state is not copied: it is the commit until the next step (live_commit)."""
        _finish(getattr(self, "_copy", None))
        old = getattr(self, "_saved_optimizer_state", None)
        old = old if isinstance(old, dict) else {}
        current = self.value.state_dict()
        self.live_tensors = live_commit.state_tensors(current["state"]) if live else []
        if live:
            self._copy = None
            self._saved_optimizer_state = {"param_groups": copy.deepcopy(current["param_groups"])}
            return
        deferred: List[Tuple[torch.Tensor, torch.Tensor]] = []
        self._saved_optimizer_state = type(current)(
            (k, snapshot(old.get(k), v, deferred if background and k == "state" else None))
            for k, v in current.items())
        self._copy = _copier.submit(deferred, "optimizer")

    def restore(self) -> None:
        wait_for_commit()
        _check(getattr(self, "_copy", None))
        self._drop_pending()
        if "state" not in self._saved_optimizer_state:  # a live commit: the hyper-parameters only
            for group, saved in zip(self.value.param_groups, self._saved_optimizer_state["param_groups"]):
                group.update({k: copy.deepcopy(v) for k, v in saved.items() if k != "params"})
            return
        # A copy: torch's load_state_dict keeps the very tensors it is given as the optimizer's state,
        # and the next commit copies into the saved ones.
        self.value.load_state_dict(copy.deepcopy(self._saved_optimizer_state))

    def sync(self, root_rank: int = 0) -> None:
        wait_for_commit()
        broadcast_optimizer_state(self.value, root_rank=root_rank, model=self.model)

    def _drop_pending(self) -> None:
        """A DistributedOptimizer whose step failed may hold handles of the dead engine: forget them."""
        handles = getattr(self.value, "_handles", None)
        if isinstance(handles, dict) and handles:
            handles.clear()
            delay = getattr(self.value, "_allreduce_delay", {})
            for p in delay:
                delay[p] = self.value.backward_passes_per_step
            counts = getattr(self.value, "_group_counts", None)
            if isinstance(counts, dict):
                for key in counts:
                    counts[key] = 0
        if hasattr(self.value, "_synchronized"):
            self.value._synchronized = False


class SamplerStateHandler(StateHandler):
    """An ElasticSampler: its epoch and processed samples; sync unions every rank's processed ones."""

    def __init__(self, sampler: ElasticSampler) -> None:
        super().__init__(sampler)
        self.save()

    def save(self) -> None:
        self._saved_sampler_state = copy.deepcopy(self.value.state_dict())

    def restore(self) -> None:
        self.value.load_state_dict(copy.deepcopy(self._saved_sampler_state))

    def sync(self, root_rank: int = 0) -> None:
        """Every rank's processed samples count (they were disjoint shares); the root's epoch."""
        mine = self.value.state_dict()
        processed: Set[int] = set()
        for part in allgather_object(sorted(mine["processed_indices"]), name="elastic.sampler.processed"):
            processed.update(part)
        epoch = broadcast_object(mine["epoch"], root_rank=root_rank, name="elastic.sampler.epoch")
        self.value.load_state_dict({"epoch": epoch, "processed_indices": processed})
        self.save()

    def reset(self) -> None:
        self.value.reset()


# Horovod's registry: the first (type, handler class) whose type the value is an instance of wins.
_handler_registry: List[Tuple[type, Type[StateHandler]]] = [
    (torch.nn.Module, ModelStateHandler),
    (torch.optim.Optimizer, OptimizerStateHandler),
    (ElasticSampler, SamplerStateHandler),
]


def get_handler_registry() -> List[Tuple[type, Type[StateHandler]]]:
    """The (type, StateHandler subclass) pairs TorchState consults, in order."""
    return _handler_registry


def set_handler_registry(registry: List[Tuple[type, Type[StateHandler]]]) -> None:
    """Replace the registry (for TorchState objects made afterwards)."""
    global _handler_registry
    _handler_registry = registry


def _get_handler(value: Any) -> Optional[StateHandler]:
    for handler_type, handler_cls in _handler_registry:
        if isinstance(value, handler_type):
            return handler_cls(value)
    # An object that brings its own handler (lightcc.torch.DiLoCo), so this module need not know it.
    make = getattr(type(value), "elastic_state_handler", None)
    return make(value) if callable(make) else None


class TorchState(ObjectState):
    """A model's and an optimizer's state plus any picklable attributes, committed and restored together.

    `async_commit` (True by default; set it on the class or on one state): `commit()` leaves the copy
    of the parameters and the optimizer's state tensors to a background thread that overlaps the
    next forward and backward; the next optimizer step, restore, sync and commit wait for it.
    """

    async_commit: bool = True
    # Commits after the first WARMUP keep the live tensors instead of copies while the script commits
    # right after each optimizer step (lightcc/torch/elastic/live_commit.py); False: always copy.
    live_commit: bool = True

    def __init__(self, model: Optional[torch.nn.Module] = None, optimizer: Optional[torch.optim.Optimizer] = None,
                 **kwargs: Any) -> None:
        kwargs.update(model=model, optimizer=optimizer)
        handlers: Dict[str, StateHandler] = {}
        plain: Dict[str, Any] = {}
        for name, value in kwargs.items():
            handler = _get_handler(value)
            if handler is None:
                plain[name] = value
            else:
                handlers[name] = handler
                if isinstance(handler, OptimizerStateHandler) and handler.model is None and \
                        isinstance(model, torch.nn.Module):
                    handler.model = model
        self._handlers = handlers
        self._live = live_commit.LiveCommit(lambda: self.live_commit)
        for name, handler in handlers.items():
            setattr(self, name, handler.value)
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **plain)

    def save(self) -> None:
        wait_for_commit()
        self._save_handlers()
        super().save()

    def _save_handlers(self) -> None:
        live = self._live.live
        kept: List[torch.Tensor] = []
        for h in self._handlers.values():
            if isinstance(h, OptimizerStateHandler):
                self._live.watch(h.value)
            # A subclass that overrides save() (without `background`) saves as it always did.
            if type(h).save in (ModelStateHandler.save, OptimizerStateHandler.save):
                h.save(background=self.async_commit and not live, live=live)
                kept.extend(h.live_tensors)
            else:
                h.save()
        self._live.committed(kept)

    def restore(self) -> None:
        wait_for_commit()
        for h in self._handlers.values():
            h.restore()
        super().restore()

    def sync(self) -> None:
        """Every rank takes the state of one that holds its last commit: rank 0, unless rank 0 stepped
        past a live commit (live_commit.choose_source)."""
        wait_for_commit()
        root, warning = live_commit.choose_source(allgather_object(self._live.ahead(), name="elastic.state.ahead"))
        if warning and rank() == 0:
            print(f"lightcc elastic: {warning}", file=sys.stderr)
        for h in self._handlers.values():
            # A handler's sync takes the root only when it is not rank 0 (a script's own handler, or one
            # that wraps ours, may not take it).
            h.sync(root) if root else h.sync()
        if self._saved_state:
            self._saved_state = broadcast_object(self._saved_state, root_rank=root, name="elastic.state.values")
            self._set_attrs()
        self._save_handlers()

    def reset(self) -> None:
        wait_for_commit()
        for h in self._handlers.values():
            h.reset()

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "_handlers" and hasattr(self, "_handlers") and name in self._handlers and hasattr(self, name):
            self._handlers[name].set_value(value)
        super().__setattr__(name, value)


__all__ = ["ModelStateHandler", "OptimizerStateHandler", "SamplerStateHandler", "StateHandler", "TorchState",
           "get_handler_registry", "set_handler_registry", "wait_for_commit"]
