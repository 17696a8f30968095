"""Benchmarks of lightcc that need more than lightcc-bench: emulated clusters, training quality."""
