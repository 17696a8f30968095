"""lightcc-bench: nccl-tests-style collective benchmarks of lightcc against gloo and MPI.

Layout (one job per module):
  cli       front end: parses arguments, measures the machine, launches workers, reports
  launch    builds the lightccrun / mpirun command line and runs it under a hard timeout
  worker    one benchmark process: runs every library in turn and gathers results to rank 0
  suite     the per-library measurement loops (bandwidth sweep, latency, negotiation)
  backend*  one adapter per library (lightcc, torch.distributed gloo, mpi4py)
  sizes, metrics, patterns, timing, table, report, plot, membw, progress, spec: pure helpers
"""
