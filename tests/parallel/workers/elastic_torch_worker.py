"""An elastic torch training script, as a user would write it, run under lightccrun's elastic driver.

Prints one line per event for the test to read:
  START <worker> <pid>
  STEP <worker> gen=<g> rank=<r> size=<n> epoch=<e> batch=<b> t=<unix time>
  FINAL <worker> gen=<g> rank=<r> size=<n> epoch=<e> digest=<sha256 of the weights> samples=<n>
Arguments: EPOCHS SAMPLES BATCH STEP_SLEEP_S COMMIT_EVERY
ELASTIC_TEST_DEVICE=cuda trains on the GPU (tests/gpu/test_features_gpu.py); each process is then its
own NCCL "host" (NCCL_HOSTID from its pid), as the GPU tests arrange for ranks sharing one GPU.
"""
import faulthandler
import hashlib
import os
import signal
import sys
import time

import torch

import lightcc.torch as hvd
from lightcc.common.elastic_worker import session

epochs, samples, batch, step_sleep, commit_every = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                                    float(sys.argv[4]), int(sys.argv[5]))
wid = os.environ.get("LIGHTCC_ELASTIC_WORKER", "?")
faulthandler.register(signal.SIGUSR1, all_threads=True)  # a test that sees a hang dumps the stacks
device = torch.device(os.environ.get("ELASTIC_TEST_DEVICE", "cpu"))
if device.type == "cuda":
    os.environ.setdefault("NCCL_HOSTID", f"elastic-gpu-{os.getpid()}")
    torch.cuda.set_device(0)
    device = torch.device("cuda", 0)
print(f"START {wid} {os.getpid()}", flush=True)
if wid in os.environ.get("ELASTIC_TEST_DIE_IN_INIT", "").split(","):
    # A worker that dies after it joined a generation, before its engine meets the others there.
    session().init_options = lambda: os.kill(os.getpid(), signal.SIGKILL)
hvd.init()

torch.manual_seed(0)
gen = torch.Generator().manual_seed(1)
features = torch.randn(samples, 16, generator=gen)
targets = features @ torch.randn(16, 4, generator=gen) + 0.1
dataset = torch.utils.data.TensorDataset(features, targets)

model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=3)
state = hvd.elastic.TorchState(model, optimizer, train_sampler=sampler, epoch=0, batch=0, seen=0)
resets = []
state.register_reset_callbacks([lambda: resets.append(hvd.size())])
assert state.model is model and state.train_sampler is sampler
if wid in os.environ.get("ELASTIC_TEST_DIE_IN_SYNC", "").split(","):
    # A worker that joins later dies in the middle of the state broadcast (model sent, optimizer not).
    def _die(*_root: int) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    state._handlers["optimizer"].sync = _die


def generation() -> int:
    s = session()
    return s.generation if s is not None else 0


@hvd.elastic.run
def train(state):
    while state.epoch < epochs:
        loader = torch.utils.data.DataLoader(dataset, batch_size=batch, sampler=state.train_sampler)
        for idx, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            x, y = x.to(device), y.to(device)
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            state.train_sampler.record_batch(idx, batch)
            state.batch += 1
            state.seen += x.shape[0] * hvd.size()
            print(f"STEP {wid} gen={generation()} rank={hvd.rank()} size={hvd.size()} epoch={state.epoch} "
                  f"batch={state.batch} t={time.time():.4f}", flush=True)
            time.sleep(step_sleep)
            if state.batch % commit_every == 0:
                state.commit()
        state.epoch += 1
        state.train_sampler.set_epoch(state.epoch)
        state.commit()
    return state.epoch


epoch = train(state)
digest = hashlib.sha256(b"".join(p.detach().cpu().numpy().tobytes() for p in model.state_dict().values())).hexdigest()
print(f"FINAL {wid} gen={generation()} rank={hvd.rank()} size={hvd.size()} epoch={epoch} digest={digest} "
      f"samples={state.seen} resets={resets}", flush=True)
