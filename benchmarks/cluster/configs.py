"""The four measured configurations and the environment flags that select each one."""

from __future__ import annotations

from dataclasses import dataclass

TOPK_THRESHOLD = 2097152
TOPK_DENSITY = 0.01


@dataclass(frozen=True)
class Config:
    """A configuration: short key, label for tables, engine flags."""

    key: str
    label: str
    env: dict[str, str]


def all_configs(ranks_per_host: int) -> list[Config]:
    """flat ring (Horovod's behaviour), 2D, top-k, 2D + top-k — in that order."""
    # The engine picks 2D by itself where it pays (LIGHT_2D_ALLREDUCE unset): flat rows ask for flat.
    flat = {"LIGHT_2D_ALLREDUCE": "0"}
    two_d = {"LIGHT_2D_ALLREDUCE": "1", "LIGHT_INTRA_SIZE": str(ranks_per_host)}
    topk = {
        "LIGHT_TOPK_ALLREDUCE": "1",
        "LIGHT_TOPK_THRESHOLD": str(TOPK_THRESHOLD),
        "LIGHT_TOPK_DENSITY": str(TOPK_DENSITY),
        # The replay sends flattened gradients at full density from the first step: keep them
        # compressed (vectors too) and skip the warm-up, so step times measure the exchange.
        "LIGHT_TOPK_MIN_DIMS": "1",
        "LIGHT_TOPK_WARMUP_STEPS": "0",
    }
    return [
        Config("flat", "flat ring", flat),
        Config("2d", "2D", two_d),
        Config("topk", "top-k 1%", {**flat, **topk}),
        Config("2d_topk", "2D + top-k 1%", {**two_d, **topk}),
    ]


def stream_configs(ranks_per_host: int) -> list[Config]:
    """flat ring and 2D with LIGHT_NUM_STREAMS=2 and 4 (keys flat+s2, 2d+s4, ...); only run when named.

    The part before '+' is the base configuration: streams change concurrency, not the bytes the
    cost model counts.
    """
    return [
        Config(f"{c.key}+s{k}", f"{c.label}, {k} streams", {**c.env, "LIGHT_NUM_STREAMS": str(k)})
        for c in all_configs(ranks_per_host)[:2]
        for k in (2, 4)
    ]


def fusion_configs() -> list[Config]:
    """LIGHT_FUSION_STRATEGY on the flat ring (not in the default run): size is the flat ring itself."""
    return [
        Config("fusion_order", "order fusion", {"LIGHT_2D_ALLREDUCE": "0", "LIGHT_FUSION_STRATEGY": "order"}),
        Config("fusion_cost", "cost fusion", {"LIGHT_2D_ALLREDUCE": "0", "LIGHT_FUSION_STRATEGY": "cost"}),
        Config("fusion_order_25m", "order, 25 MiB buckets",
               {"LIGHT_2D_ALLREDUCE": "0", "LIGHT_FUSION_STRATEGY": "order", "HOROVOD_FUSION_THRESHOLD": str(25 << 20)}),
        Config("2d_order", "2D + order", {"LIGHT_2D_ALLREDUCE": "1", "LIGHT_FUSION_STRATEGY": "order"}),
        Config("2d_cost", "2D + cost", {"LIGHT_2D_ALLREDUCE": "1", "LIGHT_FUSION_STRATEGY": "cost"}),
    ]


def by_keys(keys: list[str], ranks_per_host: int) -> list[Config]:
    """The configurations named in `keys` (ValueError naming the known ones)."""
    known = {c.key: c for c in all_configs(ranks_per_host) + stream_configs(ranks_per_host) + fusion_configs()}
    bad = [k for k in keys if k not in known]
    if bad:
        raise ValueError(f"unknown configurations {bad}; choose from {', '.join(known)}")
    return [known[k] for k in keys]
