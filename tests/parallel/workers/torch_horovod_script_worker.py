"""An unmodified Horovod PyTorch script: run with LIGHTCC_AS_HOROVOD=1 it must get lightcc, and train."""
import sys

import horovod.torch as hvd
import torch
import torch.nn.functional as F
from horovod.common.util import split_list
from horovod.torch.compression import Compressor
from horovod.torch.mpi_ops import _basics, synchronize

hvd.init()
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1 * hvd.size()),
                                     named_parameters=model.named_parameters())
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(optimizer, root_rank=0)
g = torch.Generator().manual_seed(hvd.rank())
x = torch.randn(64, 4, generator=g)
y = x @ torch.tensor([[1.0], [-2.0], [3.0], [0.5]])
for _ in range(200):
    optimizer.zero_grad()
    F.mse_loss(model(x), y).backward()
    optimizer.step()
loss = hvd.allreduce(F.mse_loss(model(x), y).detach(), name="final_loss")
ok = (type(hvd).__name__ == "module" and hvd.__name__ == "lightcc.torch" and issubclass(Compressor, object)
      and callable(synchronize) and _basics.size() == hvd.size() and split_list([1, 2, 3], 2) == [[1, 2], [3]]
      and float(loss) < 1e-3)
print(f"rank {hvd.rank()} of {hvd.size()}: module {hvd.__name__}, final loss {float(loss):.2e}, ok={ok}", flush=True)
hvd.shutdown()
sys.exit(0 if ok else 1)
