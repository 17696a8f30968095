"""lightccrun's elastic flags (horovodrun's names) and the hand-off from the launcher to the elastic driver.

Elastic mode is on when any of ``--min-np``, ``--max-np`` or ``--host-discovery-script`` is given.
Hosts come from the discovery script, polled every second, or else from ``-H``/``--hostfile``
(a fixed list, where failed slots still come back after their cooldown).
"""
from __future__ import annotations

import argparse
import os
from typing import List, Optional

from lightcc.runner import env_flags, plan
from lightcc.runner.discovery import HostDiscovery
from lightcc.runner.elastic_driver import ElasticDriver, ElasticSettings
from lightcc.runner.hosts import HostSlots, local_names
from lightcc.runner.remote import DEFAULT_TEMPLATE, SECRET_VAR

DEFAULT_ELASTIC_TIMEOUT_S = 600.0
DEFAULT_COOLDOWN_S = (10.0, 300.0)


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Adds the elastic options to lightccrun's parser."""
    group = parser.add_argument_group("elastic training")
    group.add_argument("--min-np", dest="min_np", type=int, help="fewest workers to train with (default -np)")
    group.add_argument("--max-np", dest="max_np", type=int, help="most workers to train with (default -np)")
    group.add_argument("--host-discovery-script", dest="host_discovery_script", metavar="SCRIPT",
                       help="prints the available hosts, one 'host:slots' or 'host' per line; polled every second")
    group.add_argument("--slots-per-host", dest="slots_per_host", type=int, default=1,
                       help="slots of a host the discovery script lists without a count (default 1)")
    group.add_argument("--standbys", dest="standbys", type=int, default=-1,
                       help="warm standby workers kept started and waiting on listed slots beyond --max-np, to "
                            "replace a failed worker at once (default: every such slot; 0: none)")
    group.add_argument("--elastic-timeout", dest="elastic_timeout", type=float, default=DEFAULT_ELASTIC_TIMEOUT_S,
                       help="seconds to wait for --min-np workers, or for a worker to rejoin (default 600)")
    group.add_argument("--reset-limit", dest="reset_limit", type=int,
                       help="fail the job after this many re-formations (default: no limit)")
    group.add_argument("--blacklist-cooldown-range", dest="cooldown_range", type=float, nargs=2,
                       metavar=("LOW", "HIGH"), default=list(DEFAULT_COOLDOWN_S),
                       help="a failed slot stays out LOW*2^(n-1) seconds after its n-th failure, at most HIGH "
                            "(default 10 300)")
    group.add_argument("--drivers", dest="drivers", metavar="HOST:PORT,HOST:PORT",
                       help="every driver of the job, so that it survives the loss of the host running lightccrun: "
                            "run the same command line on each of those hosts with its --driver-index; the first "
                            "leads, the others stand by and take over (needs LIGHTCC_JOB_SECRET set alike)")
    group.add_argument("--driver-index", dest="driver_index", type=int, default=0,
                       help="with --drivers: this driver's place in the list (0 leads; default 0)")
    group.add_argument("--fault-report", dest="fault_report", metavar="PATH",
                       help="write every failure as JSON to PATH ({'reports': [...]}, replaced atomically)")
    group.add_argument("--health-check", dest="health_check", action="store_true",
                       help="measure latency and bandwidth between every two ranks instead of running a command; "
                            "exit code 3 when a link is below --health-threshold of the median")
    group.add_argument("--health-threshold", dest="health_threshold", type=float, default=0.5,
                       help="a link is bad below this fraction of the median bandwidth (or above the median "
                            "latency divided by it); default 0.5")
    group.add_argument("--health-report", dest="health_report", metavar="PATH",
                       help="with --health-check: also write the links as JSON to PATH")
    group.add_argument("--max-restarts", dest="max_restarts", type=int, default=0,
                       help="non-elastic jobs: relaunch a failed job up to N times, its failed host left out when "
                            "the others have room (scripts resume with lightcc.checkpoint)")


def restarts_requested(args: argparse.Namespace) -> bool:
    """Whether a non-elastic job runs under the restart loop (--max-restarts, or --fault-report)."""
    if args.max_restarts < 0:
        raise ValueError(f"--max-restarts {args.max_restarts} must be >= 0")
    return not args.mpi and (args.max_restarts > 0 or bool(args.fault_report))


def requested(args: argparse.Namespace) -> bool:
    """Whether the flags ask for an elastic job (--drivers only makes sense in one)."""
    elastic = args.min_np is not None or args.max_np is not None or bool(args.host_discovery_script)
    if args.drivers and not elastic:
        raise ValueError("--drivers is for elastic jobs: give --min-np, --max-np or --host-discovery-script too")
    return elastic


def settings(args: argparse.Namespace, hosts: Optional[List[HostSlots]]) -> ElasticSettings:
    """The driver's settings from the flags, checked (ValueError names the flag)."""
    np = args.np if args.np is not None else (args.min_np or args.max_np)
    if np is None:
        raise ValueError("elastic mode needs -np, --min-np or --max-np")
    min_np = args.min_np if args.min_np is not None else np
    max_np = args.max_np if args.max_np is not None else max(np, min_np)
    if not 1 <= min_np <= np <= max_np:
        raise ValueError(f"need 1 <= --min-np ({min_np}) <= -np ({np}) <= --max-np ({max_np})")
    if not args.host_discovery_script and hosts is None:
        hosts = [HostSlots("localhost", max_np)]
    if args.slots_per_host < 1:
        raise ValueError(f"--slots-per-host {args.slots_per_host} must be at least 1")
    if args.elastic_timeout <= 0:
        raise ValueError(f"--elastic-timeout {args.elastic_timeout:g} must be positive")
    low, high = args.cooldown_range
    if not 0 <= low <= high:
        raise ValueError(f"--blacklist-cooldown-range {low:g} {high:g}: need 0 <= LOW <= HIGH")
    if args.standbys < -1:
        raise ValueError(f"--standbys {args.standbys} must be >= 0 (or -1: every slot beyond --max-np)")
    if args.reset_limit is not None and args.reset_limit < 0:
        raise ValueError(f"--reset-limit {args.reset_limit} must be >= 0")
    drivers = driver_list(args.drivers, args.driver_index)
    return ElasticSettings(np=np, min_np=min_np, max_np=max_np, elastic_timeout=args.elastic_timeout,
                           reset_limit=args.reset_limit, cooldown=(low, high), fault_report=args.fault_report,
                           verbose=args.verbose, output_dir=args.output_filename, standbys=args.standbys,
                           drivers=drivers, driver_index=args.driver_index)


def driver_list(text: Optional[str], index: int) -> tuple:
    """--drivers as a tuple of host:port (empty without it), checked with --driver-index."""
    if not text:
        if index != 0:
            raise ValueError(f"--driver-index {index} needs --drivers")
        return ()
    drivers = tuple(part.strip() for part in text.split(",") if part.strip())
    for d in drivers:
        host, _, port = d.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"--drivers {text!r}: {d!r} is not host:port")
    if len(drivers) < 2:
        raise ValueError(f"--drivers {text!r}: name at least two drivers (the leader and a standby)")
    if not 0 <= index < len(drivers):
        raise ValueError(f"--driver-index {index} is not a place in --drivers (0..{len(drivers) - 1})")
    if not os.environ.get(SECRET_VAR):
        raise ValueError(f"--drivers needs {SECRET_VAR} set, the same on every driver (each would pick its own)")
    return drivers


def launch(args: argparse.Namespace, command: List[str], hosts: Optional[List[HostSlots]]) -> int:
    """Runs the elastic job; returns lightccrun's exit code."""
    if args.mpi:
        raise ValueError("elastic mode runs its own workers; it cannot be combined with --mpi")
    s = settings(args, hosts)
    if not args.host_discovery_script and hosts is None:
        hosts = [HostSlots("localhost", s.max_np)]
    names = local_names()
    log_sink = ElasticLog()
    discovery = HostDiscovery(args.host_discovery_script, hosts, args.slots_per_host, log_sink)
    base_env = dict(os.environ)
    flag_env = env_flags.env_from_args(args)
    everything_local = not args.host_discovery_script and all(h.name in names for h in hosts)
    advertise = None if everything_local else advertise_host(args.rendezvous_addr, args.network_interfaces)
    driver = ElasticDriver(s, discovery, command, {**base_env, **flag_env}, plan.job_secret(base_env), names,
                           args.launch_template or DEFAULT_TEMPLATE, args.ssh_port or 22, advertise)
    log_sink.target = driver._log
    return driver.run()


class ElasticLog:
    """Forwards discovery messages to the driver's log once the driver exists."""

    def __init__(self) -> None:
        self.target = None

    def __call__(self, message: str) -> None:
        if self.target is not None:
            self.target(message)
        else:
            print(f"lightccrun: {message}", flush=True)


def advertise_host(rendezvous_addr: Optional[str], interfaces: Optional[str]) -> str:
    """The address remote workers use to reach this machine (the driver, and rank 0's store when rank 0
    runs here): --rendezvous-addr, else the first --network-interfaces address, else the host name."""
    if rendezvous_addr:
        host = rendezvous_addr.rsplit(":", 1)[0] if plan._has_port(rendezvous_addr) else rendezvous_addr
        return host.strip("[]")
    if interfaces:
        from lightcc.common.netif import first_address

        address = first_address(interfaces)
        if address is None:
            raise ValueError(f"--network-interfaces {interfaces!r}: no such interface with an IPv4 address here")
        return address
    return plan.socket.gethostname()
