"""Every process of an elastic test job dumps all its threads' stacks on SIGUSR1 (tests/elastic_job.py sends it on a hang)."""
import faulthandler
import signal

faulthandler.register(signal.SIGUSR1, all_threads=True)
