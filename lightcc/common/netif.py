"""Addresses of named network interfaces (``--network-interfaces``), for choosing the rendezvous.

Linux only (``SIOCGIFADDR``); on any failure the callers fall back to the host name.
"""

from __future__ import annotations

import fcntl
import socket
import struct

_SIOCGIFADDR = 0x8915


def ipv4_address(ifname: str) -> str | None:
    """The IPv4 address of interface ``ifname``, or ``None`` if it has none or does not exist."""
    if not ifname or len(ifname) > 15:
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            packed = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, struct.pack("256s", ifname.encode()))
        except OSError:
            return None
    return socket.inet_ntoa(packed[20:24])


def first_address(interfaces: str) -> str | None:
    """The address of the first interface in a comma-separated list that has one."""
    for name in (n.strip() for n in interfaces.split(",")):
        address = ipv4_address(name)
        if address:
            return address
    return None
