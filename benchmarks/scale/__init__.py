"""The emulated-cluster benchmark: `python -m benchmarks.scale` runs `lightcc-bench scale` (lightcc/bench/scale/)."""
