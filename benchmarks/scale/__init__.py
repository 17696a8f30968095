"""The emulated cluster (`python -m benchmarks.scale`): H network-namespace hosts x R ranks, probed at p = 4..64.

`probe.py` is what each rank runs (it imports only NumPy and the lightcc under test, so a
"before" checkout can run it); testbed/netns.py makes and removes the hosts; `runs.py` starts the
ranks on the cluster harness (testbed/cluster.py), injects faults (a host's link cut, its ranks
SIGKILLed) and collects what they report;
`report.py` turns runs into a table, JSON and PNGs; `cli.py` is the command. It needs root and
network namespaces, so it runs from a source checkout and is not part of the installed package.
See docs/scale.md.
"""
