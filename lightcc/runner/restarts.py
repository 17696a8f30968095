"""Auto-resume for non-elastic jobs: ``lightccrun --max-restarts N`` relaunches a failed job, failed hosts excluded.

Each attempt is an ordinary lightccrun job (every rank restarts; a script resumes from its latest
``lightcc.checkpoint``). The first rank to fail is reported (``--fault-report``) and its host is
left out of the next attempt when the other hosts still have ``-np`` slots. Ranks see the attempt
number in ``LIGHTCC_RESTART`` (0 for the first). A job stopped by a signal is not restarted.
"""
from __future__ import annotations

import argparse
import os
import time
from typing import List, Optional, Tuple

from lightcc.runner import env_flags, plan
from lightcc.runner.fault_report import FaultLog, FaultReport, signal_name
from lightcc.runner.hosts import HostSlots, assign_slots, local_names
from lightcc.runner.remote import DEFAULT_TEMPLATE
from lightcc.runner.spawn import JobRunner, describe_exit

RESTART_VAR = "LIGHTCC_RESTART"


class _RecordingRunner(JobRunner):
    """A JobRunner that also remembers when, and how, each rank exited."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.exits: List[Tuple[float, int, int, int]] = []  # (time, rank, returncode, pid)

    def _wait_one(self, rank) -> None:
        returncode = rank.process.wait()
        self.exits.append((time.monotonic(), rank.number, returncode, rank.process.pid))
        self._events.put((rank.number, returncode))

    def first_failure(self) -> Optional[Tuple[int, int, int]]:
        """(rank, returncode, pid) of the first rank that failed, if any."""
        failed = sorted(e for e in self.exits if e[2] != 0)
        return (failed[0][1], failed[0][2], failed[0][3]) if failed else None

    @property
    def interrupted(self) -> bool:
        return self._signal is not None


def _without(hosts: List[HostSlots], bad: str, np: int) -> List[HostSlots]:
    rest = [h for h in hosts if h.name != bad]
    return rest if sum(h.slots for h in rest) >= np else hosts


def run_with_restarts(args: argparse.Namespace, command: List[str], hosts: Optional[List[HostSlots]]) -> int:
    """Runs the job, restarting it up to ``--max-restarts`` times; returns the last attempt's exit code."""
    if args.np is None and hosts is None:
        raise ValueError("give -np N (and -H/--hostfile for more than this machine)")
    np = args.np if args.np is not None else sum(h.slots for h in hosts)
    hosts = list(hosts or [HostSlots("localhost", max(np, 1))])
    names = local_names()
    flag_env = env_flags.env_from_args(args)
    base_env = dict(os.environ)
    secret = plan.job_secret(base_env)
    faults = FaultLog(args.fault_report, lambda m: print(f"lightccrun: {m}", flush=True))
    restarts = args.max_restarts or 0
    for attempt in range(restarts + 1):
        slots = assign_slots(hosts, np)
        rendezvous = plan.choose_rendezvous(slots, names, args.rendezvous_addr)
        launches = plan.build_launches(slots, command, flag_env, {**base_env, RESTART_VAR: str(attempt)}, secret,
                                       rendezvous, names, args.launch_template or DEFAULT_TEMPLATE,
                                       args.ssh_port or 22, os.getcwd())
        runner = _RecordingRunner(launches, output_dir=args.output_filename, verbose=args.verbose)
        code = runner.run()
        failure = runner.first_failure()
        if code == 0 or runner.interrupted or failure is None:
            return code
        rank, returncode, pid = failure
        host = slots[rank].hostname
        faults.add(FaultReport("process_exit", attempt, rank, host, pid, None, time.time(),
                               exit_code=returncode if returncode >= 0 else None, signal=signal_name(returncode),
                               message=f"rank {rank} {describe_exit(returncode)}"))
        if attempt == restarts:
            return code
        hosts = _without(hosts, host, np)
        print(f"lightccrun: restarting the job ({attempt + 1} of {restarts}) on "
              f"{','.join(f'{h.name}:{h.slots}' for h in hosts)}", flush=True)
    return 1
