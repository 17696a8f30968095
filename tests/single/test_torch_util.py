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
