"""HARP benchmarks on emulated links (root): harp-bench scenarios through shaped network namespaces."""
