"""One rank of a time-to-accuracy run: trains the digits CNN and reports its curve and the bytes its host sent.

Run by `python -m benchmarks.quality tta` as ``python -m benchmarks.quality.tta_worker '<spec json>'``
inside an emulated host (testbed/cluster.py); the settings under test arrive as LIGHT_* variables,
the spec says the recipe and whether gradients travel as float16 (`hvd.Compression.fp16`); the
rank's host and interface come from the harness's environment (`placement`). Rank 0 prints one
``RESULT <json>``.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Dict, Tuple

from benchmarks.quality.digits import Recipe, Trainer
from lightcc.common.topk_state import topk_state_dict


def placement() -> Tuple[str, str, str, int]:
    """(host, interface, store host, store port) of this rank, from testbed/cluster.py's environment.

    torch's store (the DDP worker's) listens on rank 0's host at the port after lightcc's rendezvous port."""
    store_host, _, port = os.environ["LIGHTCC_RENDEZVOUS_ADDR"].rpartition(":")
    return os.environ["LIGHTCC_HOSTNAME"], os.environ.get("HARP_IFNAME", "lo"), store_host, int(port) + 1


def tx_bytes(iface: str) -> int:
    """Bytes this network namespace has sent on `iface` (/proc/net/dev is per namespace); 0 if absent."""
    with open("/proc/net/dev", encoding="ascii") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == iface:
                return int(rest.split()[8])
    return 0


def main(spec_json: str) -> int:
    """Trains this rank; rank 0 prints the RESULT line."""
    import torch

    import lightcc.torch as hvd

    spec = json.loads(spec_json)
    torch.set_num_threads(1)
    hvd.init()
    try:
        recipe = Recipe(**spec["recipe"])
        compression = hvd.Compression.fp16 if spec.get("compression") == "fp16" else None
        trainer = Trainer(recipe, hvd, compression=compression)
        host, iface, _, _ = placement()
        before = tx_bytes(iface)
        out = trainer.run()
        sent = tx_bytes(iface) - before
        per_host: Dict[str, int] = {}
        for h, b in hvd.allgather_object((host, sent), name="quality.bytes"):
            per_host[h] = max(per_host.get(h, 0), b)  # ranks of one host read the same counter
        digests = set(hvd.allgather_object(out.digest, name="quality.digest"))
        compressed = sorted(k for k in topk_state_dict() if not k.startswith("velocity:"))
        if hvd.rank() == 0:
            print("RESULT " + json.dumps({
                "accuracy": out.accuracy, "loss": out.loss, "steps": out.steps, "train_s": out.wall_s,
                "curve": out.curve, "bytes_per_host": per_host, "identical_weights": len(digests) == 1,
                "compressed": compressed}), flush=True)
    finally:
        hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
