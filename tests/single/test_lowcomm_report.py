"""The quality report's table (benchmarks/lowcomm/report.py): gaps to the DDP run of equal tokens, DiLoCo's knobs
named only where they differ from its defaults, and rows of every method a race writes (local, torchft's)."""
from __future__ import annotations

from benchmarks.lowcomm.report import table

SHARED = {"seed": "0", "steps": "100", "batch": "8", "ctx": "128", "lr": "0.002", "warmup": "10",
          "decay": "cosine", "min_lr_ratio": "0.1"}
DILOCO = {"sync_every": "50", "sync_warmup": "0", "outer_lr": "0.7", "outer_momentum": "0.5", "fragments": "1",
          "delay": "None", "mix": "None", "compression": "none"}


def row(method, bpb, stats=None, **args):
    return {"method": method, "ranks": 2, "args": {**SHARED, **(DILOCO if "diloco" in method else {}), **args},
            "final_val_bpb": bpb, "stats": stats or {}}


def test_gap_is_to_the_ddp_run_of_equal_tokens_and_knobs_name_only_what_differs():
    rows = [row("ddp", 2.0), row("diloco", 2.1, {"outer_exchanges": 2}),
            row("diloco", 2.2, {"outer_exchanges": 10}, fragments="5", delay="2", mix="0.25"),
            row("diloco", 1.0, {"outer_exchanges": 2}, steps="200")]
    lines = table(rows).splitlines()
    plain = next(x for x in lines if x.startswith("| diloco") and "| 2.1000 |" in x)
    assert "+5.0 %" in plain and "delay" not in plain and "mix" not in plain and "fragments" not in plain
    streaming = next(x for x in lines if "| 2.2000 |" in x)
    assert "fragments=5 delay=2 mix=0.25" in streaming and "| 10 | +10.0 %" in streaming
    longer = next(x for x in lines if "| 1.0000 |" in x)
    assert longer.endswith("| 2 | — |")  # no DDP run of 200 steps: no gap


def test_rows_of_local_and_torchft_runs_and_rows_older_than_the_mix_flag():
    old = row("diloco", 2.1, {"outer_exchanges": 2})
    del old["args"]["mix"]
    torchft = row("torchft-diloco", 2.1, {"manager_step": 2})
    lines = table([row("ddp", 2.0), row("local", 3.0), torchft, old]).splitlines()
    assert any(x.startswith("| local |") and x.endswith("| 3.0000 | 0 | +50.0 % |") for x in lines)
    assert any(x.startswith("| torchft-diloco |") and "| 2 |" in x for x in lines)
    assert not any("mix=" in x for x in lines)
