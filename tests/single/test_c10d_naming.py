"""The backend's call names: equal on every rank for the same call order, repeating per step, never shared in flight."""
from __future__ import annotations

import threading

import torch

from lightcc.torch.c10d.naming import WINDOW, Names


def _step(names: Names) -> list[str]:
    a, b = torch.zeros(3, 4), torch.zeros(7, dtype=torch.int64)
    return [names.take("allreduce", [a], (1,)), names.take("allreduce", [b], (1,)), names.take("allreduce", [a], (1,))]


def test_same_order_same_names_and_steps_repeat():
    one, two = Names("c10d.0"), Names("c10d.0")
    first = _step(one)
    assert first == _step(two)
    assert len(set(first)) == 3  # the two calls on equal shapes differ by their counter
    for _ in range(WINDOW - 1):
        _step(one)
    assert _step(one) == first  # after WINDOW calls of each signature the step's names come round again


def test_shapes_left_out_where_members_differ():
    names = Names("g")
    assert names.take("alltoall", [torch.zeros(5)], ("gather",), shaped=False) == \
        Names("g").take("alltoall", [torch.zeros(2)], ("gather",), shaped=False)


def test_a_name_is_reused_only_after_its_holder_completes():
    names = Names("g")
    fut: torch.futures.Future = torch.futures.Future()
    first = names.take("barrier", [])
    names.hold([first], fut)
    for _ in range(WINDOW - 1):
        names.take("barrier", [])
    taken: list[str] = []
    t = threading.Thread(target=lambda: taken.append(names.take("barrier", [])))
    t.start()
    t.join(0.3)
    assert t.is_alive() and not taken  # waits for the call that holds the name
    fut.set_result(None)
    t.join(5)
    assert taken == [first]
