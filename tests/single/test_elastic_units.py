"""Pure parts of elastic training: discovery parsing, slot cooldown, fault reports, flags, the control channel."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from multiprocessing.connection import Listener

import pytest

from lightcc.common import elastic_channel as ch
from lightcc.runner import elastic_args
from lightcc.runner.discovery import SlotCooldown, parse_discovery_output
from lightcc.runner.fault_report import FaultLog, FaultReport, blamed, classify, op_in, peer_in
from lightcc.runner.launch import build_parser
from testbed import procs


def test_discovery_output_hosts_and_slots():
    hosts = parse_discovery_output("a:4\n# comment\n\nb\nc:2  # spare\na:9\n", slots_per_host=3)
    assert [(h.name, h.slots) for h in hosts] == [("a", 4), ("b", 3), ("c", 2)]
    with pytest.raises(ValueError, match="line 1"):
        parse_discovery_output("a:x\n", 1)
    with pytest.raises(ValueError, match="0 slots"):
        parse_discovery_output("a:0\n", 1)


def test_slot_cooldown_backs_off_per_slot_not_per_host():
    now = [100.0]
    c = SlotCooldown(2.0, 10.0, clock=lambda: now[0])
    assert c.fail(("h", 0)) == 2.0 and c.fail(("h", 0)) == 4.0 and c.fail(("h", 0)) == 8.0
    assert c.fail(("h", 0)) == 10.0  # capped at HIGH
    assert not c.usable(("h", 0)) and c.usable(("h", 1))  # the host's other slot stays usable
    now[0] += 10.0
    assert c.usable(("h", 0))


def test_fault_classification_and_parsing():
    assert classify("while waiting for negotiation (cycle 3): rank 2 (pid 9, same host) has exited") == "link_closed"
    assert classify("no progress for 3 s while waiting for negotiation (LIGHTCC_TIMEOUT=3)") == "timeout"
    assert classify("ranks disagree on allreduce.x: shape mismatch") == "mismatch"
    assert op_in("allreduce.fc.weight failed: rank 1 closed the connection") == "allreduce.fc.weight"
    assert op_in("while waiting for negotiation (cycle 54): rank 2 has exited") == "waiting for negotiation"
    assert op_in("negotiation with rank 2: receive from rank 2: net plugin returned 6") == "negotiation"
    assert peer_in("rank 7 (pid 1) has exited") == 7 and peer_in("nothing here") is None
    # rank 1's account when rank 0 gave up waiting for a stopped rank 2: 2 is to blame, not the relay 0
    relayed = ("broadcast of 'b': while waiting for broadcast copy-out in process set 0: rank 0 (host h, pid 5) "
               "stopped: broadcast of 'b': no progress for 3 s (LIGHTCC_TIMEOUT=3); "
               "not arrived: rank 2 (host h, pid 7)")
    assert peer_in(relayed) == 2
    assert peer_in("while waiting for x: rank 0 (host h, pid 5) stopped: receive from rank 3 failed") == 3
    assert peer_in("while waiting for x: rank 0 (host h, pid 5) stopped: cancelled") is None

    # a cut link to rank 2 under a negotiation tree: rank 1 waits on its stage peer 0, which waits on 2
    t = "no progress for 3 s while waiting for negotiation (cycle 31) (LIGHTCC_TIMEOUT=3); not arrived: rank {}"
    assert blamed([t.format(0), t.format(2)], reporters=[1, 0]) == 2
    assert blamed([t.format(0)], reporters=[1, 0]) is None  # nobody else named: the driver suspects
    assert blamed(["ranks disagree on allreduce.x: rank 1 sent shape [2]"], reporters=[0, 1]) == 1
    assert blamed([], reporters=[]) is None


def test_fault_log_writes_json_and_completes_a_report(tmp_path):
    lines = []
    path = tmp_path / "sub" / "faults.json"
    log = FaultLog(str(path), lines.append)
    r = log.add(FaultReport("process_exit", 1, 2, "h2", 99, "w2", 0.0, signal="SIGKILL"))
    assert lines == ["FAULT process_exit: rank 2 (host h2, pid 99, generation 1) was killed by SIGKILL"]
    log.observe(r, 0, "h0", "allreduce.w failed: rank 2 (pid 99) has exited")
    data = json.loads(path.read_text())["reports"]
    assert data[0]["op"] == "allreduce.w" and data[0]["link"] == {"src": {"rank": 0, "host": "h0"},
                                                                  "dst": {"rank": 2, "host": "h2"}}
    assert [p.name for p in path.parent.iterdir()] == ["faults.json"]  # no temporary file left behind


def _args(*argv):
    return build_parser().parse_args([*argv, "python", "x.py"])


def test_elastic_flags_and_checks():
    a = _args("-np", "2", "--min-np", "1", "--max-np", "4", "--blacklist-cooldown-range", "1", "5",
              "--reset-limit", "3", "--fault-report", "f.json")
    assert elastic_args.requested(a)
    s = elastic_args.settings(a, None)
    assert (s.np, s.min_np, s.max_np, s.cooldown, s.reset_limit, s.fault_report) == (2, 1, 4, (1.0, 5.0), 3, "f.json")
    assert s.standbys == -1  # every listed slot beyond --max-np gets a warm standby
    assert elastic_args.settings(_args("-np", "2", "--standbys", "1"), None).standbys == 1
    assert not elastic_args.requested(_args("-np", "2"))
    assert elastic_args.settings(_args("--host-discovery-script", "d.sh", "--min-np", "2"), None).max_np == 2
    for bad, message in ((("-np", "2", "--min-np", "3"), "min-np"),
                         (("-np", "2", "--max-np", "4", "--blacklist-cooldown-range", "5", "1"), "LOW <= HIGH"),
                         (("-np", "2", "--max-np", "4", "--elastic-timeout", "0"), "elastic-timeout"),
                         (("-np", "2", "--standbys", "-2"), "standbys")):
        with pytest.raises(ValueError, match=message):
            elastic_args.settings(_args(*bad), None)


def test_advertised_address_follows_rendezvous_addr_then_network_interfaces():
    assert elastic_args.advertise_host("10.1.2.3", "lo") == "10.1.2.3"
    assert elastic_args.advertise_host("10.1.2.3:5000", None) == "10.1.2.3"
    assert elastic_args.advertise_host("[fd00::1]:5000", None) == "fd00::1"
    assert elastic_args.advertise_host(None, "lo") == "127.0.0.1"
    with pytest.raises(ValueError, match="network-interfaces"):
        elastic_args.advertise_host(None, "no-such-if0")


def test_control_channel_round_trip_and_secret():
    listener = Listener(("127.0.0.1", 0), authkey=b"s3cret")
    got = []

    def serve():
        for _ in range(2):
            try:
                conn = listener.accept()
            except Exception:  # noqa: BLE001 - the wrong secret fails in accept
                continue
            got.append(json.loads(conn.recv_bytes()))
            conn.send_bytes(json.dumps({"updated": True}).encode())
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    env = {ch.ADDR_VAR: f"127.0.0.1:{listener.address[1]}", ch.WORKER_VAR: "w5", ch.SECRET_VAR: "s3cret"}
    assert ch.enabled(env) and not ch.enabled({})
    assert ch.WorkerChannel(env).poll(3) is True
    assert got == [{"op": "poll", "generation": 3, "worker": "w5"}]
    with pytest.raises(RuntimeError, match="do not share the job secret"):
        ch.WorkerChannel({**env, ch.SECRET_VAR: "wrong"}).poll(3)
    listener.close()


def test_health_check_flags_links_against_the_median():
    from lightcc.runner.health_check import flag_bad, table

    links = [{"src_rank": 0, "src_host": "a", "dst_rank": i, "dst_host": "b", "transport": "net",
              "latency_us": lat, "bandwidth_gbps": bw} for i, (lat, bw) in enumerate(
                  [(10, 10.0), (11, 9.0), (10, 3.0), (50, 10.0)], start=1)]
    flag_bad(links, 0.5)
    assert [k["bad"] for k in links] == [False, False, True, True]
    assert "bandwidth 3.00 GB/s" in links[2]["reason"] and "latency 50.0 us" in links[3]["reason"]
    assert "BAD: bandwidth" in table(links)


def test_horovod_elastic_names_under_the_alias(tmp_path):
    """What Horovod's elastic examples import resolves to lightcc's objects under LIGHTCC_AS_HOROVOD=1."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    site_dir = tmp_path / "site"  # the alias's .pth, as pip installs it
    site_dir.mkdir()
    shutil.copy(root / "packaging" / "lightcc_horovod_alias.pth", site_dir)
    code = (
        "import site, sys; sys.path.insert(0, sys.argv[1]); site.addsitedir(sys.argv[2])\n"
        "import horovod.torch as hvd, horovod.tensorflow.keras as hk, horovod.keras as k\n"
        "import horovod.tensorflow as htf\n"
        "from horovod.common.elastic import ObjectState, State\n"
        "from horovod.common.exceptions import HostsUpdatedInterrupt\n"
        "import lightcc.torch.elastic as te, lightcc.tensorflow.keras.elastic as ke\n"
        "assert hvd.elastic is te and hvd.elastic.TorchState and hvd.elastic.ElasticSampler and hvd.elastic.run\n"
        "assert hk.elastic.CommitStateCallback is ke.CommitStateCallback is k.elastic.CommitStateCallback\n"
        "assert hk.elastic.KerasState is htf.elastic.TensorFlowKerasState and htf.elastic.TensorFlowState\n"
        "assert hk.elastic.UpdateBatchStateCallback and hk.elastic.UpdateEpochStateCallback\n"
        "print('ELASTIC NAMES OK')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"LIGHTCC_AS_HOROVOD": "1", "TF_CPP_MIN_LOG_LEVEL": "3"})
    out = subprocess.run([sys.executable, "-c", code, str(root), str(site_dir)], check=False, env=env,
                         capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert "ELASTIC NAMES OK" in out.stdout, out.stdout + out.stderr


def test_init_generation_option_jumps_the_count():
    """An elastic newcomer starts its engine at the generation's count directly (no catch-up inits)."""
    from lightcc.common.basics import _plugin_path
    from lightcc.common.native import core

    c = core()
    opts = {"rank": 0, "size": 1, "hostname": "h", "rendezvous_host": "", "rendezvous_port": 0, "secret": "",
            "process_sets": [], "bundled_net_plugin": _plugin_path()}
    start = c.init_generation()
    c.init({**opts, "generation": start + 5})
    c.shutdown()
    assert c.init_generation() == start + 5
    with pytest.raises(ValueError, match="not above"):
        c.init({**opts, "generation": start + 5})
    c.init(opts)  # without the option: one more, as before
    c.shutdown()
    assert c.init_generation() == start + 6


def test_env_rendezvous_joins_the_elastic_driver_only_in_its_workers():
    """torch's autoload alone (no `import lightcc`) routes env:// to lightcc's elastic join in a driver's worker."""
    code = ("import torch, importlib; h = importlib.import_module('torch.distributed.rendezvous')._rendezvous_handlers; "
            "print(getattr(h['env'], 'lightcc_elastic', False))")
    for env, expected in (({"LIGHTCC_ELASTIC_ADDR": "127.0.0.1:1"}, "True"), ({}, "False")):
        clean = {k: v for k, v in os.environ.items() if not k.startswith("LIGHTCC_ELASTIC")}
        out = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True,
                             timeout=120, cwd="/")
        assert out.stdout.strip() == expected, out.stderr[-2000:]


def test_driver_flags_and_checks(monkeypatch):
    monkeypatch.setenv(ch.SECRET_VAR, "s3cret")
    s = elastic_args.settings(_args("-np", "2", "--min-np", "2", "--drivers", "a:1,b:2", "--driver-index", "1"), None)
    assert (s.drivers, s.driver_index) == (("a:1", "b:2"), 1)
    assert elastic_args.settings(_args("-np", "2", "--min-np", "2"), None).drivers == ()
    for bad, message in ((("--drivers", "a:1"), "at least two"),
                         (("--drivers", "a:1,b"), "not host:port"),
                         (("--drivers", "a:1,b:70000"), "not host:port"),
                         (("--drivers", "a:1,b:2", "--driver-index", "2"), "not a place"),
                         (("--driver-index", "1"), "needs --drivers")):
        with pytest.raises(ValueError, match=message):
            elastic_args.settings(_args("-np", "2", "--min-np", "2", *bad), None)
    with pytest.raises(ValueError, match="elastic jobs"):
        elastic_args.requested(_args("-np", "2", "--drivers", "a:1,b:2"))
    monkeypatch.delenv(ch.SECRET_VAR)
    with pytest.raises(ValueError, match="LIGHTCC_JOB_SECRET"):
        elastic_args.settings(_args("-np", "2", "--min-np", "2", "--drivers", "a:1,b:2"), None)


def _serve(listener, replies):
    """Answers one request per reply on `listener` (the channel's handshake included)."""
    def run():
        for reply in replies:
            conn = listener.accept()
            conn.recv_bytes()
            conn.send_bytes(json.dumps(reply).encode())
            conn.close()
    threading.Thread(target=run, daemon=True).start()


def test_channel_moves_past_a_dead_driver_and_a_standby_to_the_leader():
    dead = Listener(("127.0.0.1", 0))
    dead_port = dead.address[1]
    dead.close()  # refuses connections, as a driver whose process died
    standby = Listener(("127.0.0.1", 0), authkey=b"s3cret")
    leader = Listener(("127.0.0.1", 0), authkey=b"s3cret")
    _serve(standby, [{"status": "standby"}])
    _serve(leader, [{"updated": True}, {"updated": False}])
    addrs = f"127.0.0.1:{dead_port},127.0.0.1:{standby.address[1]},127.0.0.1:{leader.address[1]}"
    c = ch.WorkerChannel({ch.ADDR_VAR: addrs, ch.WORKER_VAR: "w1", ch.SECRET_VAR: "s3cret"})
    assert c.standbys and c.poll(1) is True
    assert c.address == ("127.0.0.1", leader.address[1])
    assert c.poll(1) is False  # the next request goes straight to the driver that answered
    standby.close()
    leader.close()


def test_two_threads_failing_on_a_lost_driver_together_both_move_on(monkeypatch):
    """A worker's watch thread and main thread ask at once, and the first driver drops both together
    (as a lost leader does): each must go on to the next driver, not step a shared cursor twice
    and land on the lost one again, every round, until the request times out."""
    monkeypatch.setattr(ch, "REQUEST_TIMEOUT_S", 3.0)
    lost = Listener(("127.0.0.1", 0), authkey=b"s3cret")
    leader = Listener(("127.0.0.1", 0), authkey=b"s3cret")

    def drop_in_pairs():
        while True:
            pair = []
            try:
                pair.append(lost._listener._socket.accept()[0])
                lost._listener._socket.settimeout(1.0)  # a thread alone is dropped too, a second later
                pair.append(lost._listener._socket.accept()[0])
            except OSError:
                pass
            lost._listener._socket.settimeout(None)
            for sock in pair:
                sock.close()

    threading.Thread(target=drop_in_pairs, daemon=True).start()
    _serve(leader, [{"updated": True}, {"updated": True}])
    addrs = f"127.0.0.1:{lost.address[1]},127.0.0.1:{leader.address[1]}"
    c = ch.WorkerChannel({ch.ADDR_VAR: addrs, ch.WORKER_VAR: "w1", ch.SECRET_VAR: "s3cret"})
    answers, errors = [], []

    def ask():
        try:
            answers.append(c.poll(1))
        except RuntimeError as err:
            errors.append(err)

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert errors == [] and answers == [True, True]
    assert c.address == ("127.0.0.1", leader.address[1])
    lost.close()
    leader.close()


def test_a_silent_driver_fails_the_read_instead_of_blocking_it():
    silent = Listener(("127.0.0.1", 0), authkey=b"s3cret")  # accepts in the kernel, never answers
    with pytest.raises(OSError):
        ch.connect(silent.address, b"s3cret", read_s=0.3)
    silent.close()


def test_driver_record_round_trip():
    from lightcc.runner.elastic_record import Generation, Worker, adopt, record

    workers = {"w0": Worker("w0", ("a", 0), None, False, inits=2, pid=11),
               "w1": Worker("w1", ("b", 0), None, False, pending_after=3, returncode=-9, reported=True)}
    gen = Generation(4, ["w0"], "a:5000", 7, 0.0, {"w0"})
    rec = json.loads(json.dumps(record(workers, gen, 2, 3, 137)))
    got, g = adopt(rec, 100.0, 1.5, {"b"})
    assert (g.number, g.members, g.rendezvous, g.init_generation, g.done) == (4, ["w0"], "a:5000", 7, {"w0"})
    assert (got["w0"].inits, got["w0"].pid, got["w0"].alive, got["w0"].relayed) == (2, 11, True, True)
    assert (got["w1"].pending_after, got["w1"].alive, got["w1"].reported, got["w1"].is_local) == (3, False, True, True)
    assert (got["w0"].unlinked_since, got["w0"].link_grace, got["w0"].process) == (100.0, 1.5, None)


def test_relay_keeps_its_worker_running_when_no_driver_answers(tmp_path):
    """A worker whose relay reaches no driver is neither blocked on its output nor stopped: it runs to its
    end (20 MB of output, most of it dropped), and the relay exits with its code once it gave up reporting."""
    dead = Listener(("127.0.0.1", 0))
    port = dead.address[1]
    dead.close()
    done = tmp_path / "done"
    code = f"import sys\nfor i in range(200000): print('x' * 100)\nopen({str(done)!r}, 'w').close()\nsys.exit(3)"
    env = procs.base_env({ch.ADDR_VAR: f"127.0.0.1:{port},127.0.0.1:{port}", ch.WORKER_VAR: "w0",
                          ch.SECRET_VAR: "s3cret"})
    out = procs.run([sys.executable, "-m", "lightcc.runner.worker_relay", "--", sys.executable, "-c", code], 120,
                    env=env)
    assert out.returncode == 3 and done.exists()
    assert out.stdout == "" and out.stderr == ""  # it left the launch connection
