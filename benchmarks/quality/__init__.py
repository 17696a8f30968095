"""Training quality under compression: one benchmark, `python -m benchmarks.quality COMMAND` (see __main__.py).

The task (digits.py: scikit-learn's digits, one split, the torch models and trainer) is shared by
every command. `tta`: time to accuracy on emulated hosts (tta.py; tta_worker.py, or with
--ddp-hooks methods.py and ddp_worker.py; report.py and ddp_report.py render). `summary`: medians
over repeated tta runs (tta_summary.py). `ddp-report`: the --ddp-hooks comparison over seeds
(ddp_report.py). `numpy`: the NumPy MLP study of error feedback (numpy_study.py, numpy_worker.py,
numpy_mlp.py). Hosts come from testbed/netns.py (tta needs root unless --loopback) and ranks are
started by testbed/cluster.py, so this lives outside the installed package. See README.md, docs/topk.md.
"""
