"""An elastic Keras model.fit script (Horovod's example shape) run under lightccrun's elastic driver.

Prints START <worker> <pid>, STEP <worker> gen= rank= size= epoch= batch= per batch, and
FINAL <worker> gen= rank= size= epoch= digest=<sha256 of the weights>.
Arguments: EPOCHS STEPS_PER_EPOCH STEP_SLEEP_S
"""
import hashlib
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf

import lightcc.tensorflow.keras as hvd
from lightcc.common.elastic_worker import session

epochs, steps, step_sleep = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
wid = os.environ.get("LIGHTCC_ELASTIC_WORKER", "?")
print(f"START {wid} {os.getpid()}", flush=True)
hvd.init()
tf.random.set_seed(0)
keras = tf.keras

rng = np.random.default_rng(1)
x = rng.standard_normal((512, 8)).astype("float32")
y = (x @ rng.standard_normal((8, 1)) + 0.5).astype("float32")
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.01, momentum=0.9))
model.compile(optimizer=opt, loss="mse")
state = hvd.elastic.KerasState(model, batch=0, epoch=0)


def generation() -> int:
    s = session()
    return s.generation if s is not None else 0


class Progress(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        print(f"STEP {wid} gen={generation()} rank={hvd.rank()} size={hvd.size()} epoch={state.epoch} "
              f"batch={batch}", flush=True)
        time.sleep(step_sleep)


callbacks = [hvd.elastic.CommitStateCallback(state, batches_per_commit=2), hvd.elastic.UpdateBatchStateCallback(state),
             hvd.elastic.UpdateEpochStateCallback(state), Progress()]


@hvd.elastic.run
def train(state):
    data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=hvd.rank()).repeat().batch(16)
    state.model.fit(data, steps_per_epoch=steps, epochs=epochs, initial_epoch=state.epoch, callbacks=callbacks,
                    verbose=0)
    return state.epoch


epoch = train(state)
digest = hashlib.sha256(b"".join(np.ascontiguousarray(w).tobytes() for w in model.get_weights())).hexdigest()
print(f"FINAL {wid} gen={generation()} rank={hvd.rank()} size={hvd.size()} epoch={epoch} digest={digest}", flush=True)
