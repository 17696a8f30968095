"""Tests lightccrun: local spawning, output prefixes, failure propagation, signals, host lists,
the flag -> variable table, the remote path (through a fake launch template) and --mpi."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import lightcc.runner
from lightcc.runner import env_flags, mpi
from lightcc.runner.hosts import HostSlots, assign_slots, parse_hostfile, parse_hosts
from lightcc.runner.launch import build_parser
from testbed import procs

# The directory holding the `lightcc` package under test, for the launcher's child processes.
PACKAGE_ROOT = str(Path(lightcc.runner.__file__).parents[2])
LINE = re.compile(r"^\[(\d+)\]<(stdout|stderr)>:(.*)$")
RANK_VARS = ("RANK", "SIZE", "LOCAL_RANK", "LOCAL_SIZE", "CROSS_RANK", "CROSS_SIZE", "HOSTNAME")

# Prints the variables a rank sees as one JSON line.
PRINT_ENV = (
    "import json, os, sys\n"
    "keys = [k for k in os.environ if k.startswith(('LIGHTCC_', 'HOROVOD_', 'NCCL_'))]\n"
    "keys += ['HOME', 'PATH', 'OMP_NUM_THREADS', 'RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE', "
    "'MASTER_ADDR', 'MASTER_PORT']\n"
    "print(json.dumps({k: os.environ.get(k) for k in keys} | {'cwd': os.getcwd()}))\n"
    "print('to stderr from', os.environ['LIGHTCC_RANK'], file=sys.stderr)\n"
)


def clean_env(**extra: str) -> dict[str, str]:
    """testbed/procs.py's environment rule (no launcher's or lightcc's variables of this process), plus `extra`."""
    return procs.base_env(extra, (PACKAGE_ROOT,))


def lightccrun(
    *args: str, timeout: float = 60, env: dict[str, str] | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess:
    """`python -m lightcc.runner ARGS` to the end (testbed/procs.py: a hang past `timeout` dumps stacks and fails)."""
    return procs.run([sys.executable, "-m", "lightcc.runner", *args], timeout, env or clean_env(), cwd)


def tagged(text: str, stream: str) -> list[tuple[int, str]]:
    """(rank, line) for every prefixed line of one stream."""
    out = []
    for line in text.splitlines():
        match = LINE.match(line)
        if match and match.group(2) == stream:
            out.append((int(match.group(1)), match.group(3)))
    return out


def rank_envs(result: subprocess.CompletedProcess) -> dict[int, dict[str, str]]:
    envs = {}
    for rank, line in tagged(result.stdout, "stdout"):
        record = json.loads(line)
        assert int(record["LIGHTCC_RANK"]) == rank, f"line prefixed [{rank}] came from {record}"
        envs[rank] = record
    return envs


# ---- spawning local ranks ----


def test_local_ranks_share_the_cores_unless_the_user_chose():
    cores = len(os.sched_getaffinity(0))
    env = {k: v for k, v in clean_env().items() if k != "OMP_NUM_THREADS"}
    result = lightccrun("-np", "3", sys.executable, "-c", PRINT_ENV, env=env)
    assert result.returncode == 0, result.stderr
    assert {e["OMP_NUM_THREADS"] for e in rank_envs(result).values()} == {str(max(1, cores // 3))}
    result = lightccrun("-np", "2", sys.executable, "-c", PRINT_ENV, env={**env, "OMP_NUM_THREADS": "7"})
    assert {e["OMP_NUM_THREADS"] for e in rank_envs(result).values()} == {"7"}


@pytest.mark.parametrize("np", [2, 3])
def test_local_ranks_get_their_variables(np):
    result = lightccrun("-np", str(np), sys.executable, "-c", PRINT_ENV)
    assert result.returncode == 0, result.stderr
    envs = rank_envs(result)
    assert sorted(envs) == list(range(np))
    for rank, env in envs.items():
        for var in RANK_VARS:
            assert env["LIGHTCC_" + var] == env["HOROVOD_" + var], var
        assert (env["LIGHTCC_SIZE"], env["LIGHTCC_LOCAL_SIZE"]) == (str(np), str(np))
        assert env["LIGHTCC_LOCAL_RANK"] == str(rank)
        assert (env["LIGHTCC_CROSS_RANK"], env["LIGHTCC_CROSS_SIZE"]) == ("0", "1")
        assert env["LIGHTCC_HOSTNAME"] == "localhost"
    addrs = {env["LIGHTCC_RENDEZVOUS_ADDR"] for env in envs.values()}
    secrets = {env["LIGHTCC_JOB_SECRET"] for env in envs.values()}
    assert len(addrs) == 1 and re.fullmatch(r"127\.0\.0\.1:\d+", addrs.pop())
    assert len(secrets) == 1 and re.fullmatch(r"[0-9a-f]{64}", secrets.pop())
    assert sorted(tagged(result.stderr, "stderr")) == [(r, f"to stderr from {r}") for r in range(np)]
    # torch.distributed's env:// variables, its store on a port of its own beside lightcc's
    masters = {(env["MASTER_ADDR"], env["MASTER_PORT"]) for env in envs.values()}
    assert len(masters) == 1
    master = masters.pop()
    assert master[0] == "127.0.0.1" and envs[0]["LIGHTCC_RENDEZVOUS_ADDR"] != f"{master[0]}:{master[1]}"
    for rank, env in envs.items():
        assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"]) == \
            (str(rank), str(np), str(rank), str(np))


def test_init_process_group_needs_no_arguments_under_lightccrun():
    """A torch.distributed script (env://) under lightccrun, on the lightcc backend, 3 ranks."""
    pytest.importorskip("torch")
    script = Path(PACKAGE_ROOT) / "examples" / "pytorch" / "pytorch_ddp.py"
    result = lightccrun("-np", "3", sys.executable, str(script), timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("(lightcc, ") == 3 and result.stdout.count(" 0 failed") == 3, result.stdout


def test_each_job_gets_a_fresh_secret_unless_one_is_set():
    first = rank_envs(lightccrun("-np", "1", sys.executable, "-c", PRINT_ENV))
    second = rank_envs(lightccrun("-np", "1", sys.executable, "-c", PRINT_ENV))
    assert first[0]["LIGHTCC_JOB_SECRET"] != second[0]["LIGHTCC_JOB_SECRET"]
    mine = rank_envs(
        lightccrun("-np", "2", sys.executable, "-c", PRINT_ENV, env=clean_env(LIGHTCC_JOB_SECRET="chosen-by-user"))
    )
    assert {e["LIGHTCC_JOB_SECRET"] for e in mine.values()} == {"chosen-by-user"}


def test_tuning_flags_reach_the_ranks():
    result = lightccrun(
        "-np",
        "2",
        "--fusion-threshold-mb",
        "32",
        "--cycle-time-ms",
        "3.5",
        "--timeline-filename",
        "/tmp/tl.json",
        "--as-horovod",
        sys.executable,
        "-c",
        PRINT_ENV,
    )
    assert result.returncode == 0, result.stderr
    for env in rank_envs(result).values():
        assert env["HOROVOD_FUSION_THRESHOLD"] == str(32 * 1024 * 1024)
        assert env["HOROVOD_CYCLE_TIME"] == "3.5"
        assert env["HOROVOD_TIMELINE"] == "/tmp/tl.json"
        assert env["LIGHTCC_AS_HOROVOD"] == "1"
        assert "HOROVOD_AUTOTUNE" not in env  # unset flags export nothing


def test_output_filename_keeps_a_copy_per_rank(tmp_path):
    result = lightccrun(
        "-np",
        "2",
        "--output-filename",
        str(tmp_path),
        sys.executable,
        "-c",
        "import os, sys; r = os.environ['LIGHTCC_RANK']; print('out', r); print('err', r, file=sys.stderr)",
    )
    assert result.returncode == 0, result.stderr
    for rank in (0, 1):
        assert (tmp_path / f"rank.{rank}" / "stdout").read_text() == f"out {rank}\n"
        assert (tmp_path / f"rank.{rank}" / "stderr").read_text() == f"err {rank}\n"


# ---- failures and signals ----

SLEEPER_OR_FAILER = """
import os, subprocess, sys, time
rank = int(os.environ['LIGHTCC_RANK'])
if rank == 1:
    time.sleep(0.5)
    sys.exit(7)
child = subprocess.Popen(['sleep', '60'])          # a grandchild that must die too
open(sys.argv[1], 'w').write(f'{os.getpid()} {child.pid}')
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie waiting for its parent counts as dead
        return stat.read().split(") ", 1)[1][0] != "Z"


def test_failing_rank_exit_code_propagates_and_siblings_die(tmp_path):
    pids = tmp_path / "pids"
    start = time.monotonic()
    result = lightccrun("-np", "2", sys.executable, "-c", SLEEPER_OR_FAILER, str(pids))
    elapsed = time.monotonic() - start
    assert result.returncode == 7, result.stderr
    assert elapsed < 15, f"the sleeping rank was not stopped quickly ({elapsed:.1f} s)"
    assert "rank 1 on localhost exited with code 7" in result.stderr
    rank0, grandchild = (int(p) for p in pids.read_text().split())
    time.sleep(0.2)
    assert not _alive(rank0) and not _alive(grandchild)


def test_rank_ignoring_sigterm_is_killed_after_the_grace_period():
    script = (
        "import os, signal, sys, time\n"
        "if os.environ['LIGHTCC_RANK'] == '1':\n"
        "    time.sleep(0.5); sys.exit(5)\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "time.sleep(60)\n"
    )
    start = time.monotonic()
    result = lightccrun("-np", "2", sys.executable, "-c", script)
    elapsed = time.monotonic() - start
    assert result.returncode == 5, result.stderr
    assert 3.0 <= elapsed < 20, elapsed
    assert "killing them" in result.stderr


def test_rank_killed_by_a_signal_reports_128_plus_signal():
    result = lightccrun(
        "-np",
        "2",
        sys.executable,
        "-c",
        "import os, signal, time\n"
        "if os.environ['LIGHTCC_RANK'] == '0': os.kill(os.getpid(), signal.SIGKILL)\n"
        "time.sleep(60)\n",
    )
    assert result.returncode == 128 + signal.SIGKILL, result.stderr
    assert "was killed by SIGKILL" in result.stderr


def test_sigterm_to_the_launcher_is_forwarded():
    script = (
        "import os, signal, sys, time\n"
        "def bye(signum, frame):\n"
        "    print('got', signum, flush=True); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    launcher = procs.start([sys.executable, "-m", "lightcc.runner", "-np", "2", sys.executable, "-c", script],
                           clean_env(), cwd=None)
    try:
        ready = 0
        deadline = time.monotonic() + 30
        while ready < 2 and time.monotonic() < deadline:
            line = launcher.stdout.readline()
            ready += line.endswith("<stdout>:ready\n")
        assert ready == 2
        launcher.send_signal(signal.SIGTERM)
        out, err = launcher.communicate(timeout=30)
    finally:
        if launcher.poll() is None:
            procs.stop(launcher)  # its ranks too, stacks dumped
            launcher.communicate()
    assert launcher.returncode == 128 + signal.SIGTERM, err
    assert sorted(tagged(out, "stdout")) == [(0, "got 15"), (1, "got 15")]


def test_unknown_command_fails_cleanly():
    result = lightccrun("-np", "2", "/nonexistent/program")
    assert result.returncode == 127
    assert "cannot start rank 0" in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["-np", "3", "-H", "localhost:2", "true"], "more processes than the 2 slots"),
        (["-np", "2", "--fusion-threshold-mb", "-1", "true"], "--fusion-threshold-mb=-1"),
        (
            ["-np", "2", "--launch-template", "ssh {user}@{host}", "-H", "localhost:1,far:1", "true"],
            "{host} and {port}",
        ),
        (["-H", "localhost:x", "true"], "slots 'x'"),
        (["true"], "-np"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(args, message):
    result = lightccrun(*args)
    assert result.returncode == 2
    assert message in result.stderr


def test_missing_command_is_a_usage_error():
    result = lightccrun("-np", "2")
    assert result.returncode == 2 and "missing the command" in result.stderr


# ---- remote ranks through a launch template ----


def test_remote_path_through_a_fake_template(tmp_path):
    # `env -i` starts the "remote" side with an empty environment, as ssh would on another host.
    template = "env -i LIGHTCC_FAKE_HOST={host} PATH=/usr/bin:/bin"
    result = lightccrun(
        "--verbose",
        "-np",
        "4",
        "-H",
        "localhost:2,fakehost1:1,fakehost2:1",
        "--launch-template",
        template,
        "--fusion-threshold-mb",
        "1",
        sys.executable,
        "-c",
        PRINT_ENV + "print(os.environ.get('LIGHTCC_FAKE_HOST'))",
        env=clean_env(LIGHTCC_JOB_SECRET="job-secret-xyz", HOME="/home/local"),
        cwd=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    envs = {}
    fake = {}
    for rank, line in tagged(result.stdout, "stdout"):
        if line.startswith("{"):
            envs[rank] = json.loads(line)
        else:
            fake[rank] = line
    assert fake == {0: "None", 1: "None", 2: "fakehost1", 3: "fakehost2"}
    for rank, env in envs.items():
        assert env["LIGHTCC_JOB_SECRET"] == "job-secret-xyz"  # remote ranks read it from stdin
        assert env["HOROVOD_FUSION_THRESHOLD"] == str(1024 * 1024)
        assert env["cwd"] == str(tmp_path)
        assert env["PATH"] == os.environ["PATH"]  # forwarded
        assert env["HOME"] == ("/home/local" if rank < 2 else None)  # host-specific: not sent
    assert [envs[r]["LIGHTCC_HOSTNAME"] for r in range(4)] == ["localhost", "localhost", "fakehost1", "fakehost2"]
    assert [
        (envs[r]["LIGHTCC_LOCAL_RANK"], envs[r]["LIGHTCC_CROSS_RANK"], envs[r]["LIGHTCC_CROSS_SIZE"]) for r in range(4)
    ] == [("0", "0", "3"), ("1", "0", "1"), ("0", "1", "3"), ("0", "2", "3")]
    # Rank 0 is local but others are not: the store address must be reachable from them.
    addr = envs[0]["LIGHTCC_RENDEZVOUS_ADDR"]
    assert not addr.startswith("127.") and {e["LIGHTCC_RENDEZVOUS_ADDR"] for e in envs.values()} == {addr}
    assert "fakehost1: env -i LIGHTCC_FAKE_HOST=fakehost1" in result.stderr  # --verbose
    assert "job-secret-xyz" not in result.stderr + result.stdout.replace('"LIGHTCC_JOB_SECRET": "job-secret-xyz"', "")


def test_remote_rank0_gets_a_store_address_on_its_host():
    result = lightccrun(
        "-np",
        "2",
        "-H",
        "fakehost9:1,localhost:1",
        "--launch-template",
        "env LIGHTCC_FAKE_HOST={host}",
        sys.executable,
        "-c",
        PRINT_ENV,
    )
    assert result.returncode == 0, result.stderr
    addrs = {e["LIGHTCC_RENDEZVOUS_ADDR"] for e in rank_envs(result).values()}
    assert len(addrs) == 1
    host, port = addrs.pop().rsplit(":", 1)
    assert host == "fakehost9" and 20000 <= int(port) <= 59999


def test_rendezvous_addr_override():
    result = lightccrun("-np", "2", "--rendezvous-addr", "10.9.8.7:4321", sys.executable, "-c", PRINT_ENV)
    assert {e["LIGHTCC_RENDEZVOUS_ADDR"] for e in rank_envs(result).values()} == {"10.9.8.7:4321"}


# ---- host lists ----


def test_parse_hosts():
    assert parse_hosts("a:2, b:1,c") == [HostSlots("a", 2), HostSlots("b", 1), HostSlots("c", 1)]
    assert parse_hosts("10.0.0.1:4,[::1]:2") == [HostSlots("10.0.0.1", 4), HostSlots("[::1]", 2)]
    for bad, message in [
        ("a:0", "at least 1"),
        ("a:2,,b:1", "empty entry"),
        ("a b:1", "host"),
        ("a:1,a:2", "listed twice"),
        ("a:-1", "at least 1"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_hosts(bad)


def test_parse_hostfile():
    lines = ["# cluster", "node1 slots=4", "", "node2:2   # inline comment", "node3 slots=1 max_slots=8", "node4"]
    assert parse_hostfile(lines) == [
        HostSlots("node1", 4),
        HostSlots("node2", 2),
        HostSlots("node3", 1),
        HostSlots("node4", 1),
    ]
    with pytest.raises(ValueError, match="hosts.txt line 2"):
        parse_hostfile(["good:1", "bad slotz=3"], "hosts.txt")
    with pytest.raises(ValueError, match="line 1.*not an integer"):
        parse_hostfile(["node slots=many"])
    with pytest.raises(ValueError, match="lists no hosts"):
        parse_hostfile(["# nothing"])


def test_hostfile_flag_end_to_end(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("localhost slots=3\n")
    result = lightccrun("--hostfile", str(hostfile), sys.executable, "-c", PRINT_ENV)
    assert result.returncode == 0, result.stderr
    assert sorted(rank_envs(result)) == [0, 1, 2]  # -np defaults to the slots
    result = lightccrun("--hostfile", str(tmp_path / "missing"), "true")
    assert result.returncode == 2 and "No such file" in result.stderr


def test_assign_slots_matches_horovod_cross_ranks():
    # c has a second slot, but -np 4 leaves it empty: only host a has a local_rank 1.
    slots = assign_slots([HostSlots("a", 2), HostSlots("b", 1), HostSlots("c", 2)], 4)
    assert [(s.hostname, s.rank, s.local_rank, s.local_size, s.cross_rank, s.cross_size) for s in slots] == [
        ("a", 0, 0, 2, 0, 3),
        ("a", 1, 1, 2, 0, 1),
        ("b", 2, 0, 1, 1, 3),
        ("c", 3, 0, 1, 2, 3),
    ]
    assert {s.size for s in slots} == {4}
    with pytest.raises(ValueError, match="more processes than the 5 slots"):
        assign_slots([HostSlots("a", 2), HostSlots("b", 3)], 6)


# ---- flag -> variable table ----


def test_flag_to_env_mapping():
    args = build_parser().parse_args(
        [
            "--fusion-threshold-mb",
            "64",
            "--cycle-time-ms",
            "2",
            "--cache-capacity",
            "0",
            "--hierarchical-allreduce",
            "--timeline-filename",
            "/tmp/t.json",
            "--timeline-mark-cycles",
            "--no-stall-check",
            "--stall-check-time-seconds",
            "30",
            "--stall-check-shutdown-time-seconds",
            "90",
            "--log-level",
            "debug",
            "--network-interfaces",
            "eth0,eth1",
            "--as-horovod",
            "python",
            "x.py",
        ]
    )
    assert env_flags.env_from_args(args) == {
        "HOROVOD_FUSION_THRESHOLD": str(64 * 1024 * 1024),
        "HOROVOD_CYCLE_TIME": "2",
        "HOROVOD_CACHE_CAPACITY": "0",
        "HOROVOD_HIERARCHICAL_ALLREDUCE": "1",
        "HOROVOD_TIMELINE": "/tmp/t.json",
        "HOROVOD_TIMELINE_MARK_CYCLES": "1",
        "HOROVOD_STALL_CHECK_DISABLE": "1",
        "HOROVOD_STALL_CHECK_TIME_SECONDS": "30",
        "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "90",
        "HOROVOD_LOG_LEVEL": "DEBUG",
        "HOROVOD_GLOO_IFACE": "eth0",
        "NCCL_SOCKET_IFNAME": "eth0,eth1",
        "HARP_IFNAME": "=eth0,=eth1",
        "LIGHTCC_AS_HOROVOD": "1",
    }
    assert env_flags.env_from_args(build_parser().parse_args(["python"])) == {}
    # The autotune flags export Horovod's variables; out-of-range values name the flag.
    args = build_parser().parse_args(["--autotune", "--autotune-log-file", "/tmp/at.csv", "python"])
    assert env_flags.env_from_args(args) == {"HOROVOD_AUTOTUNE": "1", "HOROVOD_AUTOTUNE_LOG": "/tmp/at.csv"}
    with pytest.raises(ValueError, match="--autotune-steps-per-sample"):
        env_flags.env_from_args(build_parser().parse_args(["--autotune-steps-per-sample", "0", "python"]))
    # Horovod's spelling of the stall flag is the same option.
    args = build_parser().parse_args(["--stall-check-warning-time-seconds", "5", "python"])
    assert env_flags.env_from_args(args) == {"HOROVOD_STALL_CHECK_TIME_SECONDS": "5"}


def test_flag_table_has_one_row_per_flag_and_variable():
    flags = [f for row in env_flags.FLAGS for f in row.flags]
    assert len(flags) == len(set(flags))
    variables = [row.env for row in env_flags.FLAGS]
    assert len(variables) == len(set(variables))


# ---- --mpi and --check-build ----


def test_mpirun_command_exports_names_not_values():
    env = {
        "PATH": "/bin",
        "LIGHTCC_JOB_SECRET": "top-secret",
        "HOROVOD_CYCLE_TIME": "2",
        "LIGHTCC_RENDEZVOUS_ADDR": "node1:5000",
        "BASH_FUNC_x%%": "() { :; }",
    }
    hosts = [HostSlots("node1", 2), HostSlots("node2", 2)]
    argv = mpi.mpirun_command(
        "mpirun", mpi.OPENMPI, 4, hosts, ["python", "t.py"], env, 2222, "eth0", None, "--mca foo bar", as_root=True
    )
    assert argv[:5] == ["mpirun", "-np", "4", "-H", "node1:2,node2:2"]
    assert "--allow-run-as-root" in argv and "--oversubscribe" in argv
    assert argv[-4:] == ["foo", "bar", "python", "t.py"]
    exported = {argv[i + 1] for i, a in enumerate(argv) if a == "-x"}
    assert exported == {"PATH", "LIGHTCC_JOB_SECRET", "HOROVOD_CYCLE_TIME", "LIGHTCC_RENDEZVOUS_ADDR"}
    assert "top-secret" not in " ".join(argv) and "-p 2222" in argv
    argv = mpi.mpirun_command("mpiexec", mpi.MPICH, 2, hosts[:1], ["a"], env, None, None, None, "", as_root=True)
    assert "--allow-run-as-root" not in argv
    genv = argv[argv.index("-genvlist") + 1].split(",")
    assert "LIGHTCC_JOB_SECRET" in genv and "top-secret" not in " ".join(argv)


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun is not installed")
def test_mpi_mode_runs_under_mpirun():
    result = lightccrun(
        "--mpi",
        "-np",
        "2",
        "--cache-capacity",
        "7",
        sys.executable,
        "-c",
        "import json, os; print(json.dumps({k: os.environ.get(k) for k in "
        "['OMPI_COMM_WORLD_RANK', 'HOROVOD_CACHE_CAPACITY', "
        "'LIGHTCC_RENDEZVOUS_ADDR', 'LIGHTCC_JOB_SECRET']}))",
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line.split(":", 1)[1]) for line in result.stdout.splitlines() if "<stdout>:" in line]
    assert sorted(r["OMPI_COMM_WORLD_RANK"] for r in records) == ["0", "1"]
    assert {r["HOROVOD_CACHE_CAPACITY"] for r in records} == {"7"}
    assert len({(r["LIGHTCC_RENDEZVOUS_ADDR"], r["LIGHTCC_JOB_SECRET"]) for r in records}) == 1
    assert re.fullmatch(r"127\.0\.0\.1:\d+", records[0]["LIGHTCC_RENDEZVOUS_ADDR"])


def test_check_build_prints_a_horovod_style_table():
    result = lightccrun("--check-build")
    assert result.returncode == 0, result.stderr
    assert "Available Frameworks:" in result.stdout
    assert re.search(r"^    \[[X ]\] PyTorch$", result.stdout, re.MULTILINE)
    assert re.search(r"^    \[[X ]\] NCCL\b", result.stdout, re.MULTILINE)
    assert re.search(r"^    \[X\] lightccrun", result.stdout, re.MULTILINE)
