"""testbed/procs.py and the lifecycle it uses: its environment rule, hard timeouts, stacks on a hang, cleanup."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from testbed import procs

# Starts a grandchild in a session of its own (as lightccrun starts its ranks), records both pids, hangs.
HANG = ("import subprocess, sys, time; "
        "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], start_new_session=True); "
        "open(sys.argv[1], 'w').write(f'{c.pid}'); print('started', flush=True); time.sleep(120)")


def _gone(pids: list[int], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while procs.alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not procs.alive(pids)


def test_the_rule_strips_launchers_and_flags_and_puts_the_tree_first(monkeypatch):
    for k, v in {"OMPI_COMM_WORLD_RANK": "1", "SLURM_PROCID": "2", "RANK": "3", "MASTER_ADDR": "h", "PET_NNODES": "2",
                 "LIGHTCC_RANK": "4", "LIGHT_NUM_STREAMS": "2", "HOROVOD_CYCLE_TIME": "1", "HARP_IFNAME": "x",
                 "NCCL_DEBUG": "INFO", "KEEP_ME": "1", "PYTHONPATH": "/elsewhere"}.items():
        monkeypatch.setenv(k, v)
    env = procs.base_env({"LIGHT_NUM_STREAMS": "3"})
    assert not any(k in env for k in ("OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "RANK", "MASTER_ADDR", "PET_NNODES",
                                      "LIGHTCC_RANK", "HOROVOD_CYCLE_TIME", "HARP_IFNAME"))
    assert env["LIGHT_NUM_STREAMS"] == "3" and env["NCCL_DEBUG"] == "INFO" and env["KEEP_ME"] == "1"
    assert env["PYTHONPATH"] == os.pathsep.join([str(procs.ROOT), "/elsewhere"])
    assert env["PYTHONFAULTHANDLER"] == "1" and env["PYTHONUNBUFFERED"] == "1"
    assert procs.user_flags() == {"LIGHT_NUM_STREAMS": "2", "HOROVOD_CYCLE_TIME": "1", "HARP_IFNAME": "x"}
    ranked = procs.rank_env(1, 2, "127.0.0.1:5", "s", "h1", {"X": "y"})
    assert (ranked["LIGHTCC_RANK"], ranked["LIGHTCC_SIZE"], ranked["LIGHTCC_HOSTNAME"]) == ("1", "2", "h1")
    assert (ranked["LIGHTCC_RENDEZVOUS_ADDR"], ranked["LIGHTCC_JOB_SECRET"], ranked["X"]) == ("127.0.0.1:5", "s", "y")


def test_a_child_sees_the_rule():
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    seen = json.loads(procs.run([sys.executable, "-c", code], 30).stdout)
    assert {k: seen.get(k) for k in procs.base_env()} == procs.base_env()


def test_a_hang_dumps_every_python_stack_and_kills_the_whole_tree(tmp_path: Path):
    pid_file = tmp_path / "grandchild"
    t = time.monotonic()
    with pytest.raises(procs.Hung, match=r"1 of 1 processes ran past 2 s") as err:
        procs.run([sys.executable, "-c", HANG, str(pid_file)], 2)
    assert time.monotonic() - t < 2 + procs.DUMP_GRACE_S + 5
    # The command's own stack and its grandchild's (another session, same stderr): faulthandler's dumps.
    assert str(err.value).count("most recent call first") == 2, str(err.value)
    assert "started" in str(err.value)
    assert _gone([int(pid_file.read_text())])


def test_run_all_runs_together_and_merges_on_request():
    done = procs.run_all([[sys.executable, "-c", "import sys; print('a'); print('b', file=sys.stderr)"],
                          [sys.executable, "-c", "raise SystemExit(3)"]], [None, None], 30, merge=True)
    assert [r.returncode for r in done] == [0, 3]
    assert done[0].stdout.split() == ["a", "b"] and done[0].stderr == ""


def test_interrupt_lets_the_command_clean_up_after_its_children_dumped(tmp_path: Path):
    """A harness that owns resources (namespaces) gets SIGINT once its ranks have printed their stacks."""
    cleaned, pid_file = tmp_path / "cleaned", tmp_path / "grandchild"
    code = f"import subprocess, sys, time\ntry:\n    exec({HANG!r})\nexcept KeyboardInterrupt:\n" \
           f"    open({str(cleaned)!r}, 'w').write('yes')\n    raise"
    with pytest.raises(procs.Hung) as err:
        procs.run([sys.executable, "-c", code, str(pid_file)], 2, interrupt=10)
    assert cleaned.read_text() == "yes" and "KeyboardInterrupt" in str(err.value)
    assert str(err.value).count("most recent call first") == 1  # the grandchild's; the command was interrupted
    assert _gone([int(pid_file.read_text())])


def test_stop_ends_a_started_tree_and_start_all_cleans_up_a_failed_start(tmp_path: Path):
    pid_file = tmp_path / "grandchild"
    p = procs.start([sys.executable, "-c", HANG, str(pid_file)])
    assert p.stdout.readline().strip() == "started"
    assert procs.descendants(p.pid) == [int(pid_file.read_text())]
    procs.stop(p, dump=False)
    assert p.returncode is not None and _gone([int(pid_file.read_text())])
    p.stdout.close()
    p.stderr.close()
    with pytest.raises(OSError):
        procs.start_all([[sys.executable, "-c", "import time; time.sleep(60)"], ["/nonexistent/program"]],
                        [None, None])
    # The first, started before the second failed, was stopped: no python sleeping 60 s is left of ours.
    ours = [pid for pid in procs.descendants(os.getpid())
            if "time.sleep(60)" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")]
    assert _gone(ours)


def test_wait_reports_the_hung_by_index():
    started = procs.start_all([[sys.executable, "-c", "print('quick')"],
                               [sys.executable, "-c", "import time; time.sleep(60)"]], [None, None])
    outs, hung = procs.wait(started, 2)
    assert hung == [1] and outs[0][0] == "quick\n" and "most recent call first" in outs[1][1]
    assert all(p.returncode is not None for p in started)


# A launcher that relays its rank's stderr line by line (as lightccrun does), rank and launcher both hung.
RELAY = ("import subprocess, sys, threading, time; "
         "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], stderr=subprocess.PIPE, "
         "text=True, start_new_session=True); "
         "threading.Thread(target=lambda: [sys.stderr.write('[0] ' + line) for line in c.stderr]).start(); "
         "time.sleep(120)")


def test_a_launcher_lives_to_relay_its_ranks_stacks():
    """The rank is aborted first: its launcher, still alive, passes the rank's stacks on before its own turn."""
    with pytest.raises(procs.Hung) as err:
        procs.run([sys.executable, "-c", RELAY], 2)
    assert "[0] Current thread" in str(err.value), str(err.value)
    assert str(err.value).count("most recent call first") == 2  # the rank's (relayed), then the launcher's
