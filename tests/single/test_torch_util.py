"""Single-process pieces of the torch front: common.util, compression, elastic state, one-rank collectives."""
from __future__ import annotations

import os

import pytest
import torch

from lightcc.common import util
from lightcc.common.elastic import ObjectState


def test_split_list():
    assert util.split_list(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert util.split_list([1, 2], 4) == [[1], [2], [], []]
    with pytest.raises(ValueError):
        util.split_list([1], 0)


def test_version_compare():
    assert util.is_version_greater_equal_than("2.13.0", "2.1.0")
    assert not util.is_version_greater_equal_than("1.9.1", "1.10.0")
    assert util.is_version_greater_equal_than("0.28.1", "0.28.1")
    for bad in (("1.2", "1.0.0"), ("1.0.0", 3)):
        with pytest.raises(ValueError):
            util.is_version_greater_equal_than(*bad)


def test_env_context_manager():
    os.environ.pop("LIGHTCC_TEST_A", None)
    os.environ["LIGHTCC_TEST_B"] = "keep"
    with util.env(LIGHTCC_TEST_A="1", LIGHTCC_TEST_B=None):
        assert os.environ["LIGHTCC_TEST_A"] == "1" and "LIGHTCC_TEST_B" not in os.environ
    assert "LIGHTCC_TEST_A" not in os.environ and os.environ.pop("LIGHTCC_TEST_B") == "keep"


def test_extension_checks():
    assert util.extension_available("horovod.torch") and util.extension_available("lightcc.torch")
    assert not util.extension_available("horovod.mxnet")
    with pytest.raises(ImportError, match="mxnet"):
        util.check_extension("horovod.mxnet", "HOROVOD_WITH_MXNET", __file__, "mpi_lib")
    assert util.num_rank_is_power_2(8) and not util.num_rank_is_power_2(6)
    assert util.gloo_built() is False and util.mpi_built() is False


def test_compressors():
    from lightcc.torch.compression import Compression, Compressor

    t = torch.tensor([1.0, 2.5, -3.0], dtype=torch.float64)
    c, ctx = Compression.fp16.compress(t)
    assert c.dtype == torch.float16 and Compression.fp16.decompress(c, ctx).dtype == torch.float64
    i = torch.tensor([1, 2])
    c, ctx = Compression.fp16.compress(i)
    assert c is i and Compression.fp16.decompress(c, ctx) is i
    assert Compression.none.compress(t)[0] is t
    with pytest.raises(NotImplementedError):
        Compressor.compress(t)


def test_object_state_commit_restore():
    state = ObjectState(bcast_object=lambda obj: obj, get_rank=lambda: 0, epoch=0, hist=[1])
    state.epoch, state.hist = 3, [1, 2]
    state.commit()
    state.epoch = 9
    state.hist.append(3)
    state.restore()
    assert state.epoch == 3 and state.hist == [1, 2]
    calls = []
    state.register_reset_callbacks([lambda: calls.append(1)])
    state.on_reset()
    assert calls == [1]


def test_single_process_front():
    import lightcc.torch as hvd

    hvd.init()
    try:
        assert hvd.size() == 1 and hvd.rank() == 0
        x = torch.arange(6.0).view(2, 3)
        assert torch.equal(hvd.allreduce(x, op=hvd.Sum), x)
        assert torch.equal(hvd.allgather(x), x)
        out, splits = hvd.alltoall(x, splits=[2])
        assert torch.equal(out, x) and splits.tolist() == [2]
        sampler = hvd.elastic.ElasticSampler(list(range(10)), shuffle=True, seed=1)
        first = list(sampler)
        assert sorted(first) == list(range(10)) and len(sampler) == 10
        sampler.record_batch(0, 4)
        sampler.reset()
        assert sorted(sampler) == sorted(first[4:]) and len(sampler) == 6
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        state = hvd.elastic.TorchState(model, opt, epoch=1)
        before = model.weight.detach().clone()
        with torch.no_grad():
            model.weight.add_(1.0)
        state.epoch = 5
        state.restore()
        assert torch.equal(model.weight, before) and state.epoch == 1

        @hvd.elastic.run
        def train(st):
            st.epoch = 7
            st.commit()
            return st.epoch

        assert train(state) == 7
    finally:
        hvd.shutdown()


def test_elastic_state_handlers_and_registry():
    """Horovod's torch.elastic.state: StateHandler subclasses chosen by the registry, set_value on assignment."""
    import lightcc.torch as hvd
    from lightcc.torch.elastic import sampler as sampler_mod
    from lightcc.torch.elastic import state as state_mod

    class Counter:
        def __init__(self) -> None:
            self.n = 0

    class CounterHandler(state_mod.StateHandler):
        def __init__(self, value: Counter) -> None:
            super().__init__(value)
            self.save()

        def save(self) -> None:
            self._saved = self.value.n

        def restore(self) -> None:
            self.value.n = self._saved

        def sync(self) -> None:
            self.value.n = hvd.broadcast_object(self.value.n, root_rank=0, name="counter")

    hvd.init()
    registry = state_mod.get_handler_registry()
    try:
        assert sampler_mod.ElasticSampler is hvd.elastic.ElasticSampler is state_mod.ElasticSampler
        assert state_mod.TorchState is hvd.elastic.TorchState
        assert [h for _, h in registry] == [state_mod.ModelStateHandler, state_mod.OptimizerStateHandler,
                                            state_mod.SamplerStateHandler]
        state_mod.set_handler_registry(registry + [(Counter, CounterHandler)])
        counter, model = Counter(), torch.nn.Linear(2, 2)
        state = hvd.elastic.TorchState(model, torch.optim.SGD(model.parameters(), lr=0.1), counter=counter, epoch=0)
        assert state.counter is counter and isinstance(state._handlers["counter"], CounterHandler)
        assert isinstance(state._handlers["optimizer"], state_mod.OptimizerStateHandler)
        assert state._handlers["optimizer"].model is model
        counter.n = 3
        state.commit()
        counter.n = 9
        state.restore()
        assert counter.n == 3
        other = torch.nn.Linear(2, 2)  # assigning a new object hands it to its handler, saved as it is now
        state.model = other
        assert state._handlers["model"].value is other
        saved = other.weight.detach().clone()
        with torch.no_grad():
            other.weight.add_(1.0)
        state.restore()
        assert torch.equal(other.weight, saved)
        state.sync()
        assert counter.n == 3
        with pytest.raises(NotImplementedError):
            state_mod.StateHandler(1).save()
        # Horovod's own sampler state form (processed_num) loads: the first samples of the epoch's order are done.
        sampler = sampler_mod.ElasticSampler(list(range(10)), shuffle=True, seed=2)
        order = list(sampler)
        sampler.load_state_dict({"epoch": 0, "processed_num": 4})
        assert sampler.processed_num == 4 and list(sampler) == order[4:] and len(sampler) == 6
        assert sampler.num_replicas == 1 and sampler.rank == 0 and sampler.total_size == 6
    finally:
        state_mod.set_handler_registry(registry)
        hvd.shutdown()


def test_horovod_autograd_functions():
    """horovod.torch.mpi_ops' Function classes, called with Horovod's argument order, give its gradients."""
    import lightcc.torch as hvd
    from lightcc.torch import mpi_ops as M

    hvd.init()
    try:
        ps = hvd.global_process_set
        x = torch.ones(4, 2, requires_grad=True)
        y = M.HorovodAllreduce.apply(x, None, "ha.ar", hvd.Sum, 2.0, 1.0, ps)
        y.sum().backward()
        assert torch.equal(y, 2 * x) and torch.equal(x.grad, torch.full((4, 2), 2.0))
        a, b = torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)
        ga, gb = M.HorovodGroupedAllreduce.apply(True, "ha.gar", None, 1.0, 1.0, ps, a, b)
        (ga.sum() + 2 * gb.sum()).backward()
        assert torch.equal(a.grad, torch.ones(2)) and torch.equal(b.grad, torch.full((3,), 2.0))
        x = torch.ones(3, requires_grad=True)
        M.HorovodAllgather.apply(x, "ha.ag", ps).sum().backward()
        assert torch.equal(x.grad, torch.ones(3))
        (g,) = M.HorovodGroupedAllgather.apply("ha.gag", ps, x)
        assert torch.equal(g, x)
        x = torch.ones(3, requires_grad=True)
        M.HorovodBroadcast.apply(x, 0, "ha.bc", ps).sum().backward()
        assert torch.equal(x.grad, torch.ones(3))
        x = torch.arange(4.0, requires_grad=True)
        out = M.HorovodAlltoall.apply(x, None, "ha.a2a", ps)
        assert isinstance(out, torch.Tensor) and torch.equal(out, x)
        out.sum().backward()
        assert torch.equal(x.grad, torch.ones(4))
        out, received = M.HorovodAlltoall.apply(x, [4], "ha.a2a.splits", ps)
        assert received.tolist() == [4]
        x = torch.ones(4, requires_grad=True)
        M.HorovodReducescatter.apply(x, "ha.rs", hvd.Sum, ps, 1.0, 3.0).sum().backward()
        assert torch.equal(x.grad, torch.full((4,), 3.0))
        (r,) = M.HorovodGroupedReducescatter.apply("ha.grs", hvd.Average, ps, 1.0, 1.0, x)
        assert torch.equal(r, x)
    finally:
        hvd.shutdown()
