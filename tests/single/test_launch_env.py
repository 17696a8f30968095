"""Tests lightcc.common.launch_env: launcher detection, validation, and the mpi4py rendezvous."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lightcc.common import launch_env
from lightcc.common.launch_env import LaunchInfo, detect, parse_rendezvous_addr

# The directory holding the `lightcc` package that this test imported, for child processes.
PACKAGE_ROOT = str(Path(launch_env.__file__).parents[2])
SECRET = "s3cr3t-for-tests"


def lightcc_env(**values: object) -> dict[str, str]:
    return {k: str(v) for k, v in values.items()}


def test_no_launcher_means_single_process():
    info = detect(environ={})
    assert info.launcher == "single"
    assert (info.rank, info.size, info.local_rank, info.local_size) == (0, 1, 0, 1)
    assert (info.cross_rank, info.cross_size) == (0, 1)
    assert (info.rendezvous_host, info.rendezvous_port, info.secret) == ("", 0, "")
    assert info.hostname


def test_lightccrun_variables():
    env = lightcc_env(
        LIGHTCC_RANK=3,
        LIGHTCC_SIZE=4,
        LIGHTCC_LOCAL_RANK=1,
        LIGHTCC_LOCAL_SIZE=2,
        LIGHTCC_CROSS_RANK=1,
        LIGHTCC_CROSS_SIZE=2,
        LIGHTCC_HOSTNAME="node7",
        LIGHTCC_RENDEZVOUS_ADDR="10.1.2.3:29500",
        LIGHTCC_JOB_SECRET=SECRET,
    )
    assert detect(environ=env) == LaunchInfo(
        rank=3,
        size=4,
        local_rank=1,
        local_size=2,
        cross_rank=1,
        cross_size=2,
        hostname="node7",
        rendezvous_host="10.1.2.3",
        rendezvous_port=29500,
        secret=SECRET,
        launcher="lightccrun",
    )


def test_lightccrun_wins_over_mpi_variables():
    env = lightcc_env(
        LIGHTCC_RANK=1,
        LIGHTCC_SIZE=2,
        OMPI_COMM_WORLD_RANK=0,
        OMPI_COMM_WORLD_SIZE=2,
        LIGHTCC_RENDEZVOUS_ADDR="h:1",
        LIGHTCC_JOB_SECRET=SECRET,
    )
    info = detect(environ=env)
    assert info.launcher == "lightccrun" and info.rank == 1


def test_missing_local_and_cross_are_unknown():
    env = lightcc_env(LIGHTCC_RANK=0, LIGHTCC_SIZE=2, LIGHTCC_RENDEZVOUS_ADDR="h:1", LIGHTCC_JOB_SECRET=SECRET)
    info = detect(environ=env)
    assert (info.local_rank, info.local_size, info.cross_rank, info.cross_size) == (-1, -1, -1, -1)


def test_horovod_gloo_variables():
    env = lightcc_env(
        HOROVOD_RANK=2,
        HOROVOD_SIZE=4,
        HOROVOD_LOCAL_RANK=0,
        HOROVOD_LOCAL_SIZE=2,
        HOROVOD_CROSS_RANK=1,
        HOROVOD_CROSS_SIZE=2,
        HOROVOD_HOSTNAME="worker-1",
        LIGHTCC_RENDEZVOUS_ADDR="[fe80::1]:7000",
        LIGHTCC_JOB_SECRET=SECRET,
    )
    info = detect(environ=env)
    assert info.launcher == "horovod"
    assert (info.rank, info.size, info.local_rank, info.local_size) == (2, 4, 0, 2)
    assert (info.cross_rank, info.cross_size, info.hostname) == (1, 2, "worker-1")
    assert (info.rendezvous_host, info.rendezvous_port) == ("fe80::1", 7000)


def test_horovodrun_without_rendezvous_explains_itself():
    env = lightcc_env(HOROVOD_RANK=0, HOROVOD_SIZE=2)
    with pytest.raises(ValueError, match="horovodrun.*LIGHTCC_RENDEZVOUS_ADDR.*lightccrun"):
        detect(environ=env)


def test_openmpi_variables_with_explicit_rendezvous():
    env = lightcc_env(
        OMPI_COMM_WORLD_RANK=1,
        OMPI_COMM_WORLD_SIZE=3,
        OMPI_COMM_WORLD_LOCAL_RANK=1,
        OMPI_COMM_WORLD_LOCAL_SIZE=3,
        LIGHTCC_RENDEZVOUS_ADDR="head:4000",
        LIGHTCC_JOB_SECRET=SECRET,
    )
    info = detect(environ=env)
    assert info.launcher == "mpi"
    assert (info.rank, info.size, info.local_rank, info.local_size) == (1, 3, 1, 3)
    assert (info.cross_rank, info.cross_size) == (-1, -1)
    assert (info.rendezvous_host, info.rendezvous_port, info.secret) == ("head", 4000, SECRET)


def test_mpich_pmi_variables():
    env = lightcc_env(
        PMI_RANK=5,
        PMI_SIZE=8,
        MPI_LOCALRANKID=1,
        MPI_LOCALNRANKS=4,
        LIGHTCC_RENDEZVOUS_ADDR="head:4000",
        LIGHTCC_JOB_SECRET=SECRET,
    )
    info = detect(environ=env)
    assert info.launcher == "mpi"
    assert (info.rank, info.size, info.local_rank, info.local_size) == (5, 8, 1, 4)
    env = lightcc_env(PMI_RANK=0, PMI_SIZE=2, LIGHTCC_RENDEZVOUS_ADDR="h:9", LIGHTCC_JOB_SECRET=SECRET)
    assert detect(environ=env).local_rank == -1


def test_single_process_under_a_launcher_needs_no_rendezvous():
    info = detect(environ=lightcc_env(OMPI_COMM_WORLD_RANK=0, OMPI_COMM_WORLD_SIZE=1))
    assert (info.launcher, info.size, info.rendezvous_port) == ("mpi", 1, 0)


@pytest.mark.parametrize(
    "env, variable",
    [
        ({"LIGHTCC_RANK": "x", "LIGHTCC_SIZE": "2"}, "LIGHTCC_RANK"),
        ({"LIGHTCC_RANK": "1.5", "LIGHTCC_SIZE": "2"}, "LIGHTCC_RANK"),
        ({"LIGHTCC_RANK": "2", "LIGHTCC_SIZE": "2"}, "LIGHTCC_RANK"),
        ({"LIGHTCC_RANK": "-1", "LIGHTCC_SIZE": "2"}, "LIGHTCC_RANK"),
        ({"LIGHTCC_RANK": "0", "LIGHTCC_SIZE": "0"}, "LIGHTCC_SIZE"),
        ({"LIGHTCC_RANK": "0", "LIGHTCC_SIZE": "two"}, "LIGHTCC_SIZE"),
        ({"LIGHTCC_RANK": "0"}, "LIGHTCC_SIZE"),
        ({"LIGHTCC_SIZE": "2"}, "LIGHTCC_RANK"),
        (
            {"LIGHTCC_RANK": "0", "LIGHTCC_SIZE": "2", "LIGHTCC_LOCAL_RANK": "2", "LIGHTCC_LOCAL_SIZE": "2"},
            "LIGHTCC_LOCAL_RANK",
        ),
        ({"LIGHTCC_RANK": "0", "LIGHTCC_SIZE": "2", "LIGHTCC_LOCAL_SIZE": "3"}, "LIGHTCC_LOCAL_SIZE"),
        ({"LIGHTCC_RANK": "0", "LIGHTCC_SIZE": "2", "LIGHTCC_CROSS_RANK": "-3"}, "LIGHTCC_CROSS_RANK"),
        ({"HOROVOD_RANK": "0", "HOROVOD_SIZE": "2", "HOROVOD_LOCAL_SIZE": "zero"}, "HOROVOD_LOCAL_SIZE"),
        ({"OMPI_COMM_WORLD_RANK": "4", "OMPI_COMM_WORLD_SIZE": "4"}, "OMPI_COMM_WORLD_RANK"),
        (
            {
                "PMI_RANK": "0",
                "PMI_SIZE": "2",
                "MPI_LOCALRANKID": "?",
                "LIGHTCC_RENDEZVOUS_ADDR": "h:1",
                "LIGHTCC_JOB_SECRET": "s",
            },
            "MPI_LOCALRANKID",
        ),
        ({"LIGHTCC_RANK": "0", "LIGHTCC_SIZE": "2"}, "LIGHTCC_RENDEZVOUS_ADDR"),
        ({"LIGHTCC_RANK": "0", "LIGHTCC_SIZE": "2", "LIGHTCC_RENDEZVOUS_ADDR": "h:1"}, "LIGHTCC_JOB_SECRET"),
        (
            {"LIGHTCC_RANK": "0", "LIGHTCC_SIZE": "2", "LIGHTCC_RENDEZVOUS_ADDR": "h:1", "LIGHTCC_JOB_SECRET": ""},
            "LIGHTCC_JOB_SECRET",
        ),
        (
            {"LIGHTCC_RANK": "0", "LIGHTCC_SIZE": "2", "LIGHTCC_RENDEZVOUS_ADDR": "nohost", "LIGHTCC_JOB_SECRET": "s"},
            "LIGHTCC_RENDEZVOUS_ADDR",
        ),
    ],
)
def test_invalid_values_name_the_variable(env, variable):
    with pytest.raises(ValueError, match=variable):
        detect(environ=env)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("host:1", ("host", 1)),
        ("10.0.0.1:65535", ("10.0.0.1", 65535)),
        ("[::1]:29500", ("::1", 29500)),
        (" node-3.cluster:80 ", ("node-3.cluster", 80)),
    ],
)
def test_parse_rendezvous_addr(text, expected):
    assert parse_rendezvous_addr(text) == expected


@pytest.mark.parametrize(
    "text", ["host", "host:", ":80", "host:0", "host:65536", "host:port", "::1:80", "[::1]", "[::1]80", "[]:80"]
)
def test_parse_rendezvous_addr_rejects(text):
    with pytest.raises(ValueError, match="LIGHTCC_RENDEZVOUS_ADDR"):
        parse_rendezvous_addr(text)


def test_launch_info_is_frozen():
    info = detect(environ={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.rank = 1  # type: ignore[misc]


def test_mpi_without_address_or_mpi4py_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # makes `from mpi4py import MPI` fail
    env = lightcc_env(OMPI_COMM_WORLD_RANK=0, OMPI_COMM_WORLD_SIZE=2)
    with pytest.raises(ValueError, match="install mpi4py.*LIGHTCC_RENDEZVOUS_ADDR.*LIGHTCC_JOB_SECRET"):
        detect(environ=env)


def test_non_mpi4py_comm_is_ignored():
    assert detect(comm=[0, 1], environ={}).launcher == "single"


_MPI_PROBE = """
import json, sys
from mpi4py import MPI
from lightcc.common.launch_env import detect
world = MPI.COMM_WORLD
reversed_comm = world.Split(color=0, key=-world.Get_rank())
for name, info in (("env", detect()), ("comm", detect(reversed_comm))):
    print(json.dumps({"which": name, "world": world.Get_rank(), **info.__dict__}), flush=True)
"""


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun is not installed")
def test_mpirun_rank0_broadcasts_address_and_secret():
    pytest.importorskip("mpi4py")
    flags = ["--allow-run-as-root", "--oversubscribe"] if os.geteuid() == 0 else []
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIGHTCC_", "HOROVOD_", "OMPI_", "PMI"))}
    env["PYTHONPATH"] = PACKAGE_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run(
        ["mpirun", *flags, "-np", "2", sys.executable, "-c", _MPI_PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(records) == 4, result.stdout
    for which in ("env", "comm"):
        group = [r for r in records if r["which"] == which]
        assert {(r["rendezvous_host"], r["rendezvous_port"], r["secret"]) for r in group} == {
            (group[0]["rendezvous_host"], group[0]["rendezvous_port"], group[0]["secret"])
        }
        assert group[0]["rendezvous_host"] == "127.0.0.1"  # both ranks share this host
        assert 1 <= group[0]["rendezvous_port"] <= 65535 and len(group[0]["secret"]) == 64
        for r in group:
            assert r["launcher"] == "mpi" and r["size"] == 2
            assert (r["local_size"], r["cross_size"], r["cross_rank"]) == (2, 1, 0)
            expected_rank = r["world"] if which == "env" else 1 - r["world"]
            assert r["rank"] == expected_rank and r["local_rank"] == expected_rank
    # Two detections are two rendezvous: fresh secrets each time.
    assert len({r["secret"] for r in records}) == 2
