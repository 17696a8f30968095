"""Horovod's ``torch.elastic.state``: TorchState, the StateHandlers that save/restore/sync its objects, and their registry.

TorchState keeps the script's own objects: `state.model`, `state.optimizer` and any keyword whose
type the handler registry names (a module, an optimizer, an ElasticSampler by default) are the
very objects the script holds, saved by value at commit and restored in place; other keywords are
plain picklable attributes. As in Horovod, `set_handler_registry` lets a script add handlers for
its own types, and assigning `state.model = other` hands the new object to its handler.
"""
from __future__ import annotations

import collections
import copy
from typing import Any, Dict, List, Optional, Set, Tuple, Type

import torch

from lightcc.common.basics import rank
from lightcc.common.elastic import ObjectState
from lightcc.torch.elastic.reform import move_ddp
from lightcc.torch.elastic.sampler import ElasticSampler
from lightcc.torch.functions import allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters


def snapshot(previous: Any, current: Any) -> Any:
    """A copy of `current` (a state_dict: nested dicts and lists of tensors and plain values) that
    reuses `previous`'s tensors where shape, dtype and device still match.

    A commit every step would otherwise allocate the whole model and optimizer state anew each
    time (fresh pages the kernel must fault in and zero); copying into the last commit's tensors
    is one memory copy.
    """
    if torch.is_tensor(current):
        if torch.is_tensor(previous) and previous.shape == current.shape and previous.dtype == current.dtype \
                and previous.device == current.device and previous.layout == current.layout == torch.strided:
            return previous.copy_(current.detach())
        return current.detach().clone()
    if isinstance(current, dict):
        old = previous if isinstance(previous, dict) else {}
        return type(current)((k, snapshot(old.get(k), v)) for k, v in current.items()) \
            if not isinstance(current, collections.OrderedDict) else \
            collections.OrderedDict((k, snapshot(old.get(k), v)) for k, v in current.items())
    if isinstance(current, list):
        old = previous if isinstance(previous, list) and len(previous) == len(current) else [None] * len(current)
        return [snapshot(o, v) for o, v in zip(old, current)]
    return copy.deepcopy(current)


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

    def save(self) -> None:
        self._saved_model_state = snapshot(getattr(self, "_saved_model_state", None), self.value.state_dict())

    def restore(self) -> None:
        self.value.load_state_dict(self._saved_model_state)

    def sync(self) -> None:
        broadcast_parameters(self.value.state_dict(), root_rank=0)

    def reset(self) -> None:
        """A DistributedDataParallel model moves to torch's new default group."""
        move_ddp(self.value)


class OptimizerStateHandler(StateHandler):
    """A torch.optim.Optimizer: its state_dict; `model` (TorchState's) names its state tensors on sync."""

    def __init__(self, optimizer: torch.optim.Optimizer, model: Optional[torch.nn.Module] = None) -> None:
        super().__init__(optimizer)
        self.model = model
        self.save()

    def save(self) -> None:
        self._saved_optimizer_state = snapshot(getattr(self, "_saved_optimizer_state", None),
                                               self.value.state_dict())

    def restore(self) -> None:
        self._drop_pending()
        # A copy: torch's load_state_dict keeps the very tensors it is given as the optimizer's state,
        # and the next commit copies into the saved ones.
        self.value.load_state_dict(copy.deepcopy(self._saved_optimizer_state))

    def sync(self) -> None:
        broadcast_optimizer_state(self.value, root_rank=0, model=self.model)

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

    def sync(self) -> None:
        """Every rank's processed samples count (they were disjoint shares); rank 0's epoch."""
        mine = self.value.state_dict()
        processed: Set[int] = set()
        for part in allgather_object(sorted(mine["processed_indices"]), name="elastic.sampler.processed"):
            processed.update(part)
        epoch = broadcast_object(mine["epoch"], root_rank=0, name="elastic.sampler.epoch")
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
    return None


class TorchState(ObjectState):
    """A model's and an optimizer's state plus any picklable attributes, committed and restored together."""

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
        for name, handler in handlers.items():
            setattr(self, name, handler.value)
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **plain)

    def save(self) -> None:
        for h in self._handlers.values():
            h.save()
        super().save()

    def restore(self) -> None:
        for h in self._handlers.values():
            h.restore()
        super().restore()

    def sync(self) -> None:
        for h in self._handlers.values():
            h.sync()
        super().sync()
        for h in self._handlers.values():
            h.save()

    def reset(self) -> None:
        for h in self._handlers.values():
            h.reset()

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "_handlers" and hasattr(self, "_handlers") and name in self._handlers and hasattr(self, name):
            self._handlers[name].set_value(value)
        super().__setattr__(name, value)


__all__ = ["ModelStateHandler", "OptimizerStateHandler", "SamplerStateHandler", "StateHandler", "TorchState",
           "get_handler_registry", "set_handler_registry"]
