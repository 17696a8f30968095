"""The DDP gradient exchanges `benchmarks.quality tta --ddp-hooks` compares: which backend, which hook, which warm-up.

A setting is ``<method>[-default][@<backend>]``:

- ``dense``: DDP's own allreduce through its process group (no hook);
- ``torch-fp16``: torch's ``fp16_compress_hook``;
- ``powersgd1``, ``powersgd2``, ``powersgd4``: torch's ``powerSGD_hook`` at matrix_approximation_rank
  1, 2, 4, every other PowerSGDState argument at torch's default but the start (below);
- ``fp16``, ``allreduce``: lightcc's ``fp16_compress_hook`` and ``allreduce_hook`` (lightcc/torch/ddp_hooks.py);
- ``topk1``, ``topk0.1``: lightcc's ``topk_hook`` at 1 % and 0.1 % with the optimizer declared
  (DGC's momentum correction), every weight matrix compressed (LIGHT_TOPK_THRESHOLD=512).

Warm-up. PowerSGD allreduces dense until ``start_powerSGD_iter`` (torch's default 1,000) and
lightcc's top-k decays its density from 25 % over ``LIGHT_TOPK_WARMUP_STEPS`` (default 200); a
short benchmark run is shorter than either. Both start at the same scaled step by default: the
run's steps times ``--warmup-fraction`` (0.1, torch's documented starting point for
start_powerSGD_iter: "10% of total training steps"). ``-default`` keeps the tool's own default.

Backends are those a user of each hook would run on CPU: torch's hooks over ``gloo``, lightcc's
over the ``lightcc`` backend (``init_process_group("lightcc")``); ``@gloo`` or ``@lightcc``
overrides. Importable without torch.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, List

TORCH_POWERSGD_START = 1000  # torch's PowerSGDState default start_powerSGD_iter
BACKENDS = ("gloo", "lightcc")
# method -> (hook, default backend, PowerSGD rank, top-k ratio)
BASE: Dict[str, Any] = {
    "dense": ("none", "gloo", 0, 0.0),
    "torch-fp16": ("torch-fp16", "gloo", 0, 0.0),
    "powersgd1": ("powersgd", "gloo", 1, 0.0),
    "powersgd2": ("powersgd", "gloo", 2, 0.0),
    "powersgd4": ("powersgd", "gloo", 4, 0.0),
    "fp16": ("lightcc-fp16", "lightcc", 0, 0.0),
    "allreduce": ("lightcc-allreduce", "lightcc", 0, 0.0),
    "topk1": ("topk", "lightcc", 0, 0.01),
    "topk0.1": ("topk", "lightcc", 0, 0.001),
}
DEFAULT_SETTINGS = ("dense@gloo,dense@lightcc,torch-fp16,fp16,powersgd1,powersgd2,powersgd4,powersgd2-default,"
                    "topk1,topk0.1,topk1-default,topk0.1-default")


@dataclass(frozen=True)
class Method:
    """One DDP gradient exchange: `hook` on DDP over `backend`, with its warm-up."""

    setting: str
    hook: str  # none, torch-fp16, powersgd, lightcc-fp16, lightcc-allreduce, topk
    backend: str
    rank: int = 0  # PowerSGD matrix_approximation_rank
    ratio: float = 0.0  # top-k density
    default_warmup: bool = False  # the tool's own warm-up instead of the scaled one

    def warmup_steps(self, total_steps: int, fraction: float) -> int:
        """The step compression starts at (PowerSGD) or reaches its density (top-k); 0 for the rest."""
        if self.hook == "powersgd":
            # PowerSGD needs a start above 1 with error feedback and warm start (torch checks it).
            return TORCH_POWERSGD_START if self.default_warmup else max(2, round(fraction * total_steps))
        if self.hook == "topk":
            return 200 if self.default_warmup else max(1, round(fraction * total_steps))
        return 0

    def env(self, total_steps: int, fraction: float) -> Dict[str, str]:
        """LIGHT_* flags the ranks start with (the lightcc backend starts the engine at init_process_group)."""
        if self.hook != "topk":
            return {}
        env = {"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_DENSITY": repr(self.ratio), "LIGHT_TOPK_THRESHOLD": "512"}
        if not self.default_warmup:
            env["LIGHT_TOPK_WARMUP_STEPS"] = str(self.warmup_steps(total_steps, fraction))
        return env

    def spec(self, total_steps: int, fraction: float) -> Dict[str, Any]:
        """What the worker needs (JSON-able)."""
        return dict(asdict(self), warmup=self.warmup_steps(total_steps, fraction))


def parse(setting: str) -> Method:
    """``topk1-default@gloo`` -> Method; ValueError naming the choices otherwise."""
    name, _, backend = setting.partition("@")
    default = name.endswith("-default")
    base = name[:-len("-default")] if default else name
    if base not in BASE:
        raise ValueError(f"unknown DDP setting {setting!r}: <method>[-default][@gloo|@lightcc], method from "
                         f"{', '.join(BASE)}")
    hook, backend_default, rank, ratio = BASE[base]
    backend = backend or backend_default
    if backend not in BACKENDS:
        raise ValueError(f"DDP setting {setting!r}: backend {backend!r} is not one of {BACKENDS}")
    if default and hook not in ("powersgd", "topk"):
        raise ValueError(f"DDP setting {setting!r}: only powersgd and topk have a warm-up to keep at its default")
    return Method(setting, hook, backend, rank, ratio, default)


def parse_all(settings: str) -> List[Method]:
    """A comma list of settings, in order."""
    return [parse(s.strip()) for s in settings.split(",") if s.strip()]
