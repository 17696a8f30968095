"""Training quality under top-k compression: a small real task trained with lightcc at a few ranks."""
