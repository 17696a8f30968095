"""`python -m benchmarks.quality COMMAND ...`: the one command line of the quality benchmark.

    python -m benchmarks.quality tta [--ddp-hooks] [--hosts 2] [--rates 1gbit,none] ... [--json run.json]
    python -m benchmarks.quality summary run1.json run2.json ... [--md summary.md] [--plot summary.png]
    python -m benchmarks.quality ddp-report sweep.json [--target 92] [--compact 92,85] [--plot sweep.png]
    python -m benchmarks.quality numpy [--ranks 4] [--seeds 0,1,2] [--out lightcc-results/quality/quality.json]

`tta`: time to accuracy of dense, fp16 and top-k (or, with --ddp-hooks, DDP hooks against PowerSGD)
on emulated hosts (root; --loopback without). `summary` and `ddp-report` re-render their JSON.
`numpy`: the NumPy MLP, dense vs top-k with and without error feedback, on loopback ranks.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType

# command -> the module that adds its options and runs it (add_arguments(parser), command(args))
COMMANDS = {
    "tta": "benchmarks.quality.tta",
    "summary": "benchmarks.quality.tta_summary",
    "ddp-report": "benchmarks.quality.ddp_report",
    "numpy": "benchmarks.quality.numpy_study",
}


def _module(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name])


def build_parser() -> argparse.ArgumentParser:
    """The parser of `python -m benchmarks.quality`, one subcommand per entry of COMMANDS."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.quality", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        mod = _module(name)
        sp = sub.add_parser(name, help=mod.__doc__.split("\n")[0], description=mod.__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(sp)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m benchmarks.quality`; the exit status."""
    args = build_parser().parse_args(argv)
    return _module(args.command).command(args)


if __name__ == "__main__":
    sys.exit(main())
