"""``lightccrun``: the command-line launcher (horovodrun's flags, lightcc's rendezvous).

``lightccrun -np 4 -H host1:2,host2:2 python train.py`` starts four ranks, local ones directly and
remote ones through ``--launch-template`` (ssh by default), each with its rank variables, rank 0's
store address and a fresh job secret; ``--mpi`` hands the job to mpirun instead. The exit code is
the first failing rank's.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from lightcc.runner import check_build, elastic_args, env_flags, health_check, plan, restarts
from lightcc.runner.hosts import HostSlots, assign_slots, local_names, parse_hostfile, parse_hosts
from lightcc.runner.mpi import run_mpi
from lightcc.runner.remote import DEFAULT_TEMPLATE, SECRET_VAR
from lightcc.runner.spawn import run_ranks

DEFAULT_SSH_PORT = 22


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = argparse.ArgumentParser(
        prog="lightccrun",
        description="Launch a lightcc (Horovod-compatible) data-parallel job.",
        epilog="Example: lightccrun -np 4 -H node1:2,node2:2 python train.py",
    )
    parser.add_argument(
        "-np", "--num-proc", dest="np", type=int, help="number of processes (default: the total slots of -H/--hostfile)"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "-H", "--hosts", dest="hosts", help="hosts and slots, e.g. localhost:2,node2:4 (default localhost:NP)"
    )
    where.add_argument("-hostfile", "--hostfile", dest="hostfile", help="file of 'host slots=N' or 'host:N' lines")
    parser.add_argument(
        "-p", "--ssh-port", dest="ssh_port", type=int, help=f"ssh port of remote hosts (default {DEFAULT_SSH_PORT})"
    )
    parser.add_argument(
        "--launch-template",
        dest="launch_template",
        help="command prefix that runs a rank on a remote host; {host} and {port} "
        f"are filled in (default {DEFAULT_TEMPLATE!r})",
    )
    parser.add_argument(
        "--rendezvous-addr",
        dest="rendezvous_addr",
        metavar="HOST[:PORT]",
        help="address of rank 0's store as the other ranks reach it (default: rank 0's host, a free port)",
    )
    parser.add_argument(
        "--mpi",
        dest="mpi",
        action="store_true",
        help="start the ranks with mpirun instead of lightccrun's own launcher",
    )
    parser.add_argument(
        "--gloo",
        dest="gloo",
        action="store_true",
        help="accepted for horovodrun compatibility; lightccrun's own launch is the default",
    )
    parser.add_argument("--mpi-args", dest="mpi_args", default="", help="extra arguments for mpirun (with --mpi)")
    parser.add_argument(
        "--output-filename",
        dest="output_filename",
        metavar="DIR",
        help="also write each rank's output to DIR/rank.N/stdout and stderr",
    )
    parser.add_argument(
        "--verbose", dest="verbose", action="store_true", help="print the commands that start the ranks"
    )
    parser.add_argument(
        "-cb",
        "--check-build",
        dest="check_build",
        action="store_true",
        help="show which frameworks, launchers and operations are available",
    )
    parser.add_argument(
        "--install-horovodrun",
        dest="install_horovodrun",
        nargs="?",
        const="",
        metavar="DIR",
        help="write a `horovodrun` command (Horovod's flags, run by lightccrun) into DIR "
        "(default: beside this Python) and exit; never replaces Horovod's own",
    )
    env_flags.add_flags(parser)
    elastic_args.add_flags(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program to run and its arguments")
    return parser


def _hosts(args: argparse.Namespace) -> list[HostSlots] | None:
    if args.hosts:
        return parse_hosts(args.hosts)
    if args.hostfile:
        try:
            with open(args.hostfile, encoding="utf-8") as handle:
                return parse_hostfile(handle, args.hostfile)
        except OSError as err:
            raise ValueError(f"--hostfile {args.hostfile!r}: {err.strerror}") from None
    return None


def _launch(args: argparse.Namespace, command: list[str]) -> int:
    hosts = _hosts(args)
    if elastic_args.requested(args):
        return elastic_args.launch(args, command, hosts)
    if elastic_args.restarts_requested(args):
        return restarts.run_with_restarts(args, command, hosts)
    if args.np is None and hosts is None:
        raise ValueError("give -np N (and -H/--hostfile for more than this machine)")
    np = args.np if args.np is not None else sum(h.slots for h in hosts)
    hosts = hosts or [HostSlots("localhost", max(np, 1))]
    slots = assign_slots(hosts, np)
    flag_env = env_flags.env_from_args(args)
    base_env = dict(os.environ)
    secret = plan.job_secret(base_env)
    names = local_names()
    override = args.rendezvous_addr or plan.interface_rendezvous(slots, names, args.network_interfaces)
    rendezvous = plan.choose_rendezvous(slots, names, override)
    ssh_port = args.ssh_port if args.ssh_port is not None else DEFAULT_SSH_PORT
    if not 1 <= ssh_port <= 65535:
        raise ValueError(f"--ssh-port {ssh_port} is outside 1..65535")
    if args.mpi:
        env = {**base_env, **flag_env, SECRET_VAR: secret, "LIGHTCC_RENDEZVOUS_ADDR": plan.format_addr(*rendezvous)}
        return run_mpi(
            np,
            hosts,
            command,
            env,
            args.ssh_port,
            args.network_interfaces,
            args.output_filename,
            args.mpi_args,
            args.verbose,
        )
    launches = plan.build_launches(
        slots,
        command,
        flag_env,
        base_env,
        secret,
        rendezvous,
        names,
        args.launch_template or DEFAULT_TEMPLATE,
        ssh_port,
        os.getcwd(),
    )
    return run_ranks(launches, output_dir=args.output_filename, verbose=args.verbose)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``lightccrun``; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.check_build:
        print(check_build.report())
        return 0
    if args.install_horovodrun is not None:
        from lightcc.runner import horovodrun_install

        try:
            print(f"lightccrun: wrote {horovodrun_install.install(args.install_horovodrun or None)}")
        except ValueError as err:
            print(f"lightccrun: error: {err}", file=sys.stderr)
            return 2
        return 0
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if args.health_check:
        command = health_check.command(args.health_threshold, args.health_report)
    if not command:
        parser.error("missing the command to run (e.g. lightccrun -np 2 python train.py)")
    try:
        env_flags.env_from_args(args)  # refuses bad or unsupported flags before anything starts
        return _launch(args, command)
    except ValueError as err:
        print(f"lightccrun: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
