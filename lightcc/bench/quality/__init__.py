"""Training quality and time to accuracy under gradient compression (`lightcc-bench quality`, docs/topk.md)."""
