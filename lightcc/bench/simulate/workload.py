"""The simulated workload: a model's gradient tensors, per-GPU batch and compute times, from a name or a profile.

A profile (JSON, written by ``record``) is one real step measured on one device:

    {"format": "lightcc-simulate-profile/1", "model": "resnet50", "device": "cpu", "batch_per_gpu": 2,
     "forward_s": 0.31, "backward_s": 0.62, "optimizer_s": 0.0,
     "tensors": [{"name": "conv1.weight", "elements": 9408, "dtype_bytes": 4, "ready_s": 0.61}, ...]}

``tensors`` are in layer (forward) order; ``ready_s`` is when that gradient was complete, counted
from the start of backward. A named model has no ready times: its gradients become ready in reverse
layer order, each after a share of backward proportional to its size (as the emulated cluster's
replay delivers them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

PROFILE_FORMAT = "lightcc-simulate-profile/1"

# Per-GPU compute of one training step (forward + backward) at the stated batch on one V100 (fp32),
# the seeds' cluster GPU. Assumptions from public single-GPU throughputs (docs/simulator.md).
COMPUTE: dict[str, tuple[int, float]] = {  # name -> (batch per GPU, seconds per step)
    "resnet50": (64, 0.178),
    "resnet101": (64, 0.305),
    "inception_v3": (64, 0.267),
    "vgg16": (64, 0.278),
    "transformer_xl": (16, 0.500),
}
FORWARD_SHARE = 1 / 3  # backward takes about twice the forward pass


@dataclass(frozen=True)
class Tensor:
    """One gradient: name, bytes, and (from a profile) when it became ready after backward began."""

    name: str
    bytes: int
    ready_s: float | None = None


@dataclass(frozen=True)
class Workload:
    """A model's gradients (layer order) and one GPU's compute per step."""

    name: str
    tensors: tuple[Tensor, ...]
    batch_per_gpu: int
    forward_s: float
    backward_s: float
    optimizer_s: float = 0.0
    source: str = ""

    @property
    def bytes(self) -> int:
        return sum(t.bytes for t in self.tensors)

    @property
    def compute_s(self) -> float:
        """One GPU's step without communication."""
        return self.forward_s + self.backward_s + self.optimizer_s

    def with_compute(self, compute_s: float, batch: int | None = None) -> Workload:
        """The same gradients with forward + backward (+ optimizer) rescaled to ``compute_s`` seconds."""
        if compute_s < 0:
            raise ValueError(f"compute time must be >= 0, got {compute_s}")
        scale = compute_s / self.compute_s if self.compute_s > 0 else 0.0
        tensors = tuple(replace(t, ready_s=None if t.ready_s is None else t.ready_s * scale) for t in self.tensors)
        if self.compute_s <= 0:
            return replace(self, forward_s=compute_s * FORWARD_SHARE, backward_s=compute_s * (1 - FORWARD_SHARE),
                           optimizer_s=0.0, tensors=tensors, batch_per_gpu=batch or self.batch_per_gpu)
        return replace(self, tensors=tensors, forward_s=self.forward_s * scale, backward_s=self.backward_s * scale,
                       optimizer_s=self.optimizer_s * scale, batch_per_gpu=batch or self.batch_per_gpu)

    def ready_order(self) -> list[tuple[float, Tensor]]:
        """(ready seconds after backward starts, tensor) in the order the gradients become ready."""
        if all(t.ready_s is not None for t in self.tensors):
            return sorted(((float(t.ready_s), t) for t in self.tensors), key=lambda x: x[0])
        total = max(1, self.bytes)
        done, out = 0, []
        for t in reversed(self.tensors):
            done += t.bytes
            out.append((self.backward_s * done / total, t))
        return out


def from_sizes(name: str, sizes: Sequence[tuple[str, int]], batch: int, compute_s: float,
               source: str, dtype_bytes: int = 4) -> Workload:
    """A workload of (name, elements) tensors in layer order with compute split forward:backward 1:2."""
    tensors = tuple(Tensor(n, int(e) * dtype_bytes) for n, e in sizes)
    return Workload(name, tensors, batch, compute_s * FORWARD_SHARE, compute_s * (1 - FORWARD_SHARE), 0.0, source)


def derive_sizes(name: str) -> list[tuple[str, int]]:
    """(parameter name, elements) of a lightcc.models model, built on torch's meta device (needs torch)."""
    import torch  # only for shapes, on the meta device

    from lightcc import models

    with torch.device("meta"):
        model = models.get(name).build()
    return [(n, int(p.numel())) for n, p in model.named_parameters() if p.requires_grad]


def model_sizes(name: str) -> tuple[list[tuple[str, int]], str]:
    """(name, elements) of a named model: the generated snapshot (sizes_data.py), else lightcc.models."""
    from lightcc.bench.simulate.sizes_data import SIZES

    if name in SIZES:
        return [(f"t{i}", n) for i, n in enumerate(SIZES[name])], "sizes_data.py (lightcc.models)"
    try:
        return derive_sizes(name), "lightcc.models"
    except ImportError as err:
        raise ValueError(f"no gradient sizes for {name!r}: lightcc.models needs torch ({err}); "
                         "record a profile instead (lightcc-bench simulate --record)") from err


def named(name: str) -> Workload:
    """A named benchmark model with the stated per-GPU compute assumption."""
    if name not in COMPUTE:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(COMPUTE)} or pass --profile")
    batch, step_s = COMPUTE[name]
    sizes, source = model_sizes(name)
    return from_sizes(name, sizes, batch, step_s, source)


def load_profile(path: str | Path) -> Workload:
    """Read a profile JSON (format above); ValueError naming the file and the problem."""
    raw = json.loads(Path(path).read_text())
    if raw.get("format") != PROFILE_FORMAT:
        raise ValueError(f"{path}: not a simulator profile (format {raw.get('format')!r}, want {PROFILE_FORMAT!r})")
    try:
        tensors = tuple(Tensor(str(t["name"]), int(t["elements"]) * int(t.get("dtype_bytes", 4)),
                               None if t.get("ready_s") is None else float(t["ready_s"])) for t in raw["tensors"])
        return Workload(str(raw["model"]), tensors, int(raw["batch_per_gpu"]), float(raw["forward_s"]),
                        float(raw["backward_s"]), float(raw.get("optimizer_s", 0.0)),
                        f"profile {Path(path).name} ({raw.get('device', '?')})")
    except (KeyError, TypeError) as err:
        raise ValueError(f"{path}: profile is missing or mistypes {err}") from err


def save_profile(w: Workload, path: str | Path, device: str, dtype_bytes: int = 4) -> None:
    """Write ``w`` as a profile JSON (tensors need ready_s)."""
    doc = {"format": PROFILE_FORMAT, "model": w.name, "device": device, "batch_per_gpu": w.batch_per_gpu,
           "forward_s": w.forward_s, "backward_s": w.backward_s, "optimizer_s": w.optimizer_s,
           "tensors": [{"name": t.name, "elements": t.bytes // dtype_bytes, "dtype_bytes": dtype_bytes,
                        "ready_s": t.ready_s} for t in w.tensors]}
    Path(path).write_text(json.dumps(doc, indent=1))
