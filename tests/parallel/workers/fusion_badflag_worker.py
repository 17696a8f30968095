"""init with a bad fusion flag: every rank must fail at init with an error naming the variable."""
from __future__ import annotations

import common  # noqa: F401

import lightcc as hvd

try:
    hvd.init()
    print("initialized (expected an error)")
except ValueError as e:
    print("ERR", e)
except RuntimeError as e:  # a peer that failed first may have closed the rendezvous
    print("ERR-PEER", e)
