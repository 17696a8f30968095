"""lightcc.tensorflow in one process: Horovod's API surface, zero-copy bridging, buffer pool, compression,
models, and a single-rank run. TensorFlow must be installed: without it this module fails to import."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

import lightcc.tensorflow as hvd  # noqa: E402
from lightcc.tensorflow import _pool, _util  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

HOROVOD_TF_NAMES = """init shutdown is_initialized start_timeline stop_timeline size local_size cross_size rank
local_rank cross_rank is_homogeneous mpi_threads_supported mpi_enabled mpi_built gloo_enabled gloo_built nccl_built
ddl_built ccl_built cuda_built rocm_built ProcessSet global_process_set add_process_set remove_process_set Average Sum
Adasum Min Max Product allreduce grouped_allreduce allgather grouped_allgather broadcast broadcast_ alltoall
reducescatter grouped_reducescatter join broadcast_variables broadcast_object broadcast_object_fn allgather_object
rank_op local_rank_op size_op local_size_op process_set_included_op Compression DistributedGradientTape
PartialDistributedGradientTape DistributedOptimizer SyncBatchNormalization broadcast_global_variables
handle_average_backwards_compatibility check_num_rank_power_of_2 _executing_eagerly _make_subgraph _cache
HorovodInternalError HostsUpdatedInterrupt""".split()

HOROVOD_KERAS_NAMES = """init shutdown size rank local_rank local_size DistributedOptimizer broadcast_global_variables
allreduce allgather broadcast reducescatter load_model callbacks SyncBatchNormalization Average Sum""".split()
CALLBACKS = ["BroadcastGlobalVariablesCallback", "MetricAverageCallback", "LearningRateScheduleCallback",
             "LearningRateWarmupCallback", "BestModelCheckpoint"]


def test_horovod_tensorflow_names_exist():
    missing = [n for n in HOROVOD_TF_NAMES if not hasattr(hvd, n)]
    assert not missing, missing
    from lightcc.tensorflow.mpi_ops import _basics

    assert callable(_basics._get_process_set_ids_and_ranks) and callable(_basics.size)
    from lightcc.tensorflow.util import _executing_eagerly

    assert _executing_eagerly() is True


@pytest.mark.parametrize("module", ["lightcc.tensorflow.keras", "lightcc.keras"])
def test_keras_front_names_exist(module):
    import importlib

    mod = importlib.import_module(module)
    missing = [n for n in HOROVOD_KERAS_NAMES if not hasattr(mod, n)]
    missing += [n for n in CALLBACKS if not hasattr(mod.callbacks, n)]
    assert not missing, missing


def test_not_initialized_is_a_value_error():
    with pytest.raises(ValueError, match="init"):
        hvd.rank()
    with pytest.raises(ValueError, match="init"):
        hvd.allreduce(tf.ones([2]))


def test_to_tensor_shares_aligned_memory_and_copies_otherwise():
    a = _pool.aligned_empty((1000,), np.float32)
    a[:] = 1.0
    t = _util.to_tensor(a)
    a[3] = 42.0
    assert float(t[3]) == 42.0  # zero-copy through DLPack
    raw = np.zeros(4001, np.uint8)
    off = 1 if raw.ctypes.data % 64 == 0 else 0
    unaligned = raw[off:off + 4000].view(np.float32)
    t2 = _util.to_tensor(unaligned)  # misaligned: copied (a DLPack import would abort TF)
    unaligned[0] = 7.0
    assert float(t2[0]) == 0.0
    bf = _pool.aligned_empty((3,), tf.bfloat16.as_numpy_dtype)
    bf[:] = [1.0, 2.0, 3.0]
    tb = _util.to_tensor(bf)
    assert tb.dtype == tf.bfloat16 and tb.numpy().astype(np.float32).tolist() == [1.0, 2.0, 3.0]
    scalar = _util.to_tensor(_pool.aligned_empty((), np.int64))
    assert scalar.shape == ()
    x = tf.range(10, dtype=tf.float32)
    assert _util.to_numpy(x).__array_interface__["data"][0] == _util.to_numpy(x).__array_interface__["data"][0]


def test_pool_reuses_a_buffer_only_after_tensorflow_releases_it():
    shape = (1 << 16,)
    a = _pool.aligned_empty(shape, np.float32)
    t = _util.to_tensor(a)
    addr = a.__array_interface__["data"][0]
    del a
    gc.collect()
    b = _pool.aligned_empty(shape, np.float32)
    assert b.__array_interface__["data"][0] != addr  # t still holds the first buffer
    del t, b
    gc.collect()
    c = _pool.aligned_empty(shape, np.float32)
    d = _pool.aligned_empty(shape, np.float32)
    assert addr in (c.__array_interface__["data"][0], d.__array_interface__["data"][0])
    assert c.__array_interface__["data"][0] != d.__array_interface__["data"][0]


def test_compression():
    x = tf.constant([1.5, -2.25], tf.float32)
    y, ctx = hvd.Compression.fp16.compress(x)
    assert y.dtype == tf.float16 and hvd.Compression.fp16.decompress(y, ctx).dtype == tf.float32
    i = tf.constant([1, 2])
    assert hvd.Compression.fp16.compress(i)[0].dtype == tf.int32
    assert hvd.Compression.none.compress(x)[0] is x
    assert issubclass(hvd.Compression.fp16, hvd.Compressor)


def test_split_list_matches_horovod():
    assert _util.split_list(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert _util.split_list([1], 3) == [[1]]


def test_benchmark_models_build_in_code():
    from lightcc.tensorflow.models import build_model

    assert abs(build_model("mlp25m").count_params() - 25_076_712) == 0
    assert build_model("transformer-xl").count_params() == 64_728_340
    assert build_model("ResNet50").count_params() == 25_636_712
    with pytest.raises(ValueError, match="unknown model"):
        build_model("no-such-model")


def test_optimizer_dispatch_rejects_other_objects():
    with pytest.raises(ValueError, match="Optimizer"):
        hvd.DistributedOptimizer(object())
    import lightcc.tensorflow.keras as hk

    with pytest.raises(ValueError, match="Average or op=Sum"):
        hk.DistributedOptimizer(tf.keras.optimizers.SGD(0.1), op=hvd.Min)
    wrapped = hk.DistributedOptimizer(tf.keras.optimizers.SGD(0.1))
    assert isinstance(wrapped, tf.keras.optimizers.SGD) and type(wrapped).__name__ == "SGD"
    with pytest.raises(ValueError, match="already a DistributedOptimizer"):
        hk.DistributedOptimizer(wrapped)


def test_single_rank_job():
    script = textwrap.dedent("""
        import numpy as np, tensorflow as tf
        import lightcc.tensorflow as hvd
        hvd.init()
        assert hvd.size() == 1 and hvd.rank() == 0
        x = tf.constant([1.0, 2.0])
        assert np.allclose(hvd.allreduce(x).numpy(), [1.0, 2.0])
        assert np.allclose(tf.function(hvd.allgather)(x).numpy(), [1.0, 2.0])
        v = tf.Variable([3.0])
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(v * v)
        g = hvd.DistributedGradientTape(tape).gradient(loss, [v])[0]
        assert np.allclose(g.numpy(), [6.0])
        hvd.shutdown()
        print("single rank ok")
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIGHTCC_", "HOROVOD_", "OMPI_", "PMI_"))}
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0 and "single rank ok" in proc.stdout, proc.stderr[-3000:]
