"""testbed.netns, the emulated-hosts harness: hosts reach each other over the bridge or the pair, shaping
is in place, a cut link stops traffic, and nothing is left behind on success or failure."""
from __future__ import annotations

import pytest

from testbed import netns, procs

pytestmark = pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))

# One TCP round trip: the server (in one namespace) echoes a line to the client (in another).
SERVER = ("import socket,sys; s=socket.create_server((sys.argv[1], 47011)); s.settimeout(15); print('up', flush=True); "
          "c,_=s.accept(); c.sendall(c.recv(64))")
CLIENT = ("import socket,sys; c=socket.create_connection((sys.argv[1], 47011), timeout=3); c.sendall(b'ping'); "
          "assert c.recv(64) == b'ping'")


def _round_trip(server: list[str], server_addr: str, client: list[str]) -> bool:
    srv = procs.start(procs.python("-c", SERVER, server_addr, prefix=server))
    try:
        assert srv.stdout.readline().strip() == "up"
        return procs.run(procs.python("-c", CLIENT, server_addr, prefix=client), 20).returncode == 0
    finally:
        procs.stop(srv, dump=False)
        procs.wait([srv], 10)  # closes its pipes


def test_star_hosts_talk_are_shaped_and_cut_and_go():
    with netns.hosts(3, rate="200mbit") as h:
        assert len(set(h.addrs)) == 3 and all(n.startswith(h.tag + "-h") for n in h.names)
        assert sorted(netns.list_namespaces(h.tag)) == sorted([*h.names, f"{h.tag}-hub"])
        assert _round_trip(h.prefix(2), h.addrs[2], h.prefix(0))
        assert "tbf" in h.qdisc_stats(1) and "rate 200Mbit" in h.qdisc_stats(1)
        assert h.burst == netns.burst_for("200mbit")
        h.cut(2)
        assert not _round_trip(h.prefix(1), h.addrs[1], h.prefix(2))
        tag = h.tag
    assert netns.list_namespaces(tag) == []


def test_everything_goes_when_the_block_fails():
    with pytest.raises(KeyError), netns.hosts(2) as h:
        tag = h.tag
        raise KeyError("the test body failed")
    assert netns.list_namespaces(tag) == []


def test_a_failed_make_removes_what_it_made():
    tag = netns.new_tag()
    with pytest.raises(ValueError, match="tc rate"):
        netns.make(2, tag, rate="fast")  # the shaping of host 0 fails after its namespace exists
    assert netns.list_namespaces(tag) == []
    made = netns.make(1, tag)
    try:
        with pytest.raises(RuntimeError, match="exist already"):
            netns.make(1, tag)
    finally:
        assert sorted(netns.teardown(tag)) == sorted([*made.names, f"{tag}-hub"])


def test_pair_talks_and_goes():
    with netns.pair() as p:
        recv, send = ["ip", "netns", "exec", p.ns_recv], ["ip", "netns", "exec", p.ns_send]
        assert _round_trip(recv, p.addr_recv, send)
        assert p.if_recv.startswith(p.ifname_prefix) and p.if_send.startswith(p.ifname_prefix)
        names = (p.ns_recv, p.ns_send)
    listed = netns.ip("netns", "list")
    assert not any(n in listed for n in names)


def test_rates_and_bursts():
    assert netns.parse_rate("1gbit") == 1e9 and netns.parse_rate("500Mbit") == 5e8
    assert netns.burst_for("1gbit") == "488kb" and netns.burst_for("10mbit") == "256kb"
    with pytest.raises(ValueError):
        netns.parse_rate("1GB")
