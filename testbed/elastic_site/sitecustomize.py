"""Every process of an elastic test job dumps all its threads' stacks on SIGUSR1 (testbed/elastic_job.py
sends it on a hang); ELASTIC_DDP_TEST_DIE_IN_SYNC=<generation> also makes the rank 0 of that generation kill
itself as it starts sending the state (elastic_faults.py), a failure in the middle of the state transfer."""
import faulthandler
import os
import signal

faulthandler.register(signal.SIGUSR1, all_threads=True)
if os.environ.get("ELASTIC_DDP_TEST_DIE_IN_SYNC"):
    import elastic_faults  # noqa: F401  (patches lightcc's torch state on import)
