"""Test and benchmark harnesses that need root: emulated hosts (network namespaces). Not installed with lightcc."""
