"""lightcc-bench simulate: predicts step time, img/s and scaling efficiency of data-parallel training.

DESIGN. An analytical, event-driven model in the spirit of ASTRA-sim / SimAI (workload x system x
network), small enough to read in one sitting. One module per job, all pure functions or frozen
dataclasses (no processes, no sockets):

* ``workload``  - the model: gradient tensors (bytes, layer order), per-GPU batch, forward/backward
                  time, and when each gradient becomes ready during backward (named models or a
                  profile JSON recorded from one real step, see ``record``).
* ``cluster``   - hosts x GPUs per host, intra-host and NIC bandwidth/latency, flows per connection,
                  per-flow and per-rank transport caps; presets for the clusters the docs compare.
* ``settings``  - lightcc's settings (flat / 2D, top-k, fusion strategy and threshold, cycle time,
                  streams, negotiation and link modes) and the engine constants (per-collective
                  cost, negotiation cost per cycle vs p, connection cost, top-k selection cost).
* ``costs``     - the alpha-beta cost of each collective and of negotiation / connection set-up.
* ``two_d``     - the engine's automatic 2D choice (LIGHT_2D_ALLREDUCE unset): groups, then the crossover.
* ``timeline``  - one step: gradients become ready, negotiation cycles agree on them, fusion groups
                  them, each batch runs on a stream while backward goes on; returns the step time.
* ``report``    - sweeps 8..1,024 GPUs into rows, formats the text table, JSON and PNG.
* ``validate``  - predictions against the emulated cluster's measured result files, and the top-k
                  constants fitted on them (``lightcc-bench simulate validate``).
* ``seeds``, ``predict_emulated`` - the published prediction tables (``lightcc-bench simulate seeds``,
                  ``... emulated``); ``crossover`` - the NIC rate below which top-k pays.
* ``make_sizes`` - regenerates ``sizes_data`` (the named models' gradient sizes) from lightcc.models.
* ``cli``       - ``lightcc-bench simulate`` argument parsing and glue.

The simulator lives here whole, validation included: benchmarks/ holds what measures the runs it is
checked against (benchmarks/cluster), not the simulator.

Everything is in seconds and bytes; bandwidths given in Gbit/s (1e9 bit/s) are converted once, in
``cluster``.
"""
