"""HARP tools: thin wrappers that run the native harp-setup and harp-bench shipped in lightcc/lib."""
