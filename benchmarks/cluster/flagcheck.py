"""Refuses to measure a configuration whose LIGHT_* flags the compiled core does not declare yet."""

from __future__ import annotations

import os


def check_flags_known() -> list[str]:
    """The LIGHT_* variables set in this process; RuntimeError naming those the core does not know.

    Without this check an old core would silently ignore the flags and a "top-k" row would really
    be a flat-ring measurement.
    """
    from lightcc.common.native import core

    known = {f["name"] for f in core().flags()}
    wanted = sorted(k for k in os.environ if k.startswith("LIGHT_"))
    missing = [k for k in wanted if k not in known]
    if missing:
        raise RuntimeError(f"the compiled core does not know {missing}: this configuration cannot be measured yet")
    return wanted
