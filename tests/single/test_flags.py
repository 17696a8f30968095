"""The flag table: documented, validated at init with errors that name the variable."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lightcc.common.native import core

ROOT = Path(__file__).resolve().parents[2]


def test_every_flag_is_documented():
    doc = (ROOT / "docs" / "flags.md").read_text()
    for flag in core().flags():
        assert f"`{flag['name']}`" in doc, f"{flag['name']} missing from docs/flags.md"


def test_flag_rows_give_the_tables_unit_and_default():
    """docs/flags.md's unit and default columns are the core's, so a changed default cannot drift."""
    doc = (ROOT / "docs" / "flags.md").read_text()
    rows = {m[0]: (m[1].replace("\\|", "|"), m[2]) for m in
            re.findall(r"^\| `([A-Z0-9_]+)` \| ((?:[^|\\]|\\\|)*) \| ([^|]*) \|", doc, re.M)}
    for flag in core().flags():
        assert rows.get(flag["name"]) == (flag["type"], flag["default"] or "—"), flag["name"]


@pytest.mark.parametrize("name,value", [
    ("HOROVOD_FUSION_THRESHOLD", "-1"), ("HOROVOD_CYCLE_TIME", "fast"), ("HOROVOD_CACHE_CAPACITY", "1.5"),
    ("HOROVOD_LOG_LEVEL", "LOUD"), ("HOROVOD_STALL_CHECK_DISABLE", "maybe"), ("LIGHTCC_TIMEOUT", "0"),
    ("LIGHTCC_SHM_CHUNK_BYTES", "100"), ("HOROVOD_THREAD_AFFINITY", "a,b"), ("LIGHT_2D_ALLREDUCE", "maybe"),
])
def test_bad_value_names_the_variable(name, value):
    code = "import lightcc as hvd\ntry:\n    hvd.init()\nexcept ValueError as e:\n    print('ERR', e)\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIGHTCC_", "HOROVOD_", "OMPI_", "PMI_"))}
    env[name] = value
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("ERR") and name in out.stdout, out.stdout + out.stderr


def test_single_process_without_launcher():
    code = ("import lightcc as hvd, numpy as np\nhvd.init()\nassert (hvd.rank(), hvd.size()) == (0, 1)\n"
            "print(hvd.allreduce(np.arange(4.0)).tolist())\nhvd.shutdown()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIGHTCC_", "HOROVOD_", "OMPI_", "PMI_"))}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[0.0, 1.0, 2.0, 3.0]", out.stdout + out.stderr
