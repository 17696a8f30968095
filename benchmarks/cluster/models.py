"""Per-tensor gradient sizes (float32 elements, layer order) of the benchmark models.

The sizes come from the torch.nn models in lightcc.models, built on torch's "meta" device (shapes
only, no memory). A snapshot of those sizes is kept beside this file (gradient_sizes.json, written
by `python -m benchmarks.cluster sizes --write`) and used only when lightcc.models cannot be
imported; every result names which source it used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SNAPSHOT = Path(__file__).resolve().parent / "gradient_sizes.json"
BENCH_MODELS = ("inception_v3", "resnet101", "vgg16", "transformer_xl")


@dataclass
class ModelGrads:
    """One model's gradient tensors: (parameter name, element count) in layer (forward) order."""

    name: str
    source: str
    tensors: list[tuple[str, int]]

    @property
    def params(self) -> int:
        return sum(n for _, n in self.tensors)

    @property
    def bytes(self) -> int:
        return 4 * self.params

    def share_at_least(self, threshold_bytes: int) -> float:
        """Fraction of the bytes in tensors of at least `threshold_bytes`."""
        return sum(4 * n for _, n in self.tensors if 4 * n >= threshold_bytes) / max(1, self.bytes)


def derive(name: str) -> ModelGrads:
    """Sizes from lightcc.models (raises ImportError/ValueError when that package cannot give them)."""
    import torch

    from lightcc import models

    spec = models.get(name)
    with torch.device("meta"):
        model = spec.build()
    tensors = [(pname, int(p.numel())) for pname, p in model.named_parameters() if p.requires_grad]
    return ModelGrads(name, "lightcc.models (torch.nn, meta device)", tensors)


def _read_snapshot() -> dict[str, list[tuple[str, int]]]:
    raw = json.loads(SNAPSHOT.read_text())
    return {k: [(str(a), int(b)) for a, b in v] for k, v in raw["models"].items()}


def gradient_sizes(name: str) -> ModelGrads:
    """Sizes of `name`: derived from lightcc.models when it imports, else the snapshot."""
    try:
        return derive(name)
    except ImportError as err:
        snap = _read_snapshot()
        if name not in snap:
            raise ValueError(
                f"no gradient sizes for {name!r}: lightcc.models failed ({err}) and the snapshot "
                f"has only {sorted(snap)}"
            ) from err
        return ModelGrads(name, f"snapshot {SNAPSHOT.name} (lightcc.models unavailable: {err})", snap[name])


def write_snapshot(names: tuple[str, ...] = BENCH_MODELS) -> Path:
    """Derive every model's sizes and store them as the fallback snapshot."""
    data = {"source": "lightcc.models on torch's meta device", "models": {}}
    for n in names:
        data["models"][n] = derive(n).tensors
    SNAPSHOT.write_text(json.dumps(data, indent=0))
    return SNAPSHOT


def synthetic(counts: list[int]) -> ModelGrads:
    """A made-up gradient list (for smoke tests): tensor i has counts[i] elements."""
    return ModelGrads("synthetic", "synthetic", [(f"t{i}", int(c)) for i, c in enumerate(counts)])


def save(grads: ModelGrads, path: Path) -> None:
    """Write sizes for the rank workers (which do not import torch)."""
    path.write_text(json.dumps({"name": grads.name, "source": grads.source, "tensors": grads.tensors}))


def load_file(path: Path) -> ModelGrads:
    """Read sizes written by `save`."""
    raw = json.loads(Path(path).read_text())
    return ModelGrads(raw["name"], raw["source"], [(str(a), int(b)) for a, b in raw["tensors"]])
