"""Simulator validation and prediction tables (lightcc-bench simulate): scripts and their results."""
