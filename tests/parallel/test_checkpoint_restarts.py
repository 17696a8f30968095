"""lightcc.checkpoint and lightccrun --max-restarts: a job killed mid-run resumes and ends where an unbroken run ends."""
from __future__ import annotations

import json
import os
import re
import sys

from testbed import procs
from testbed.elastic_job import ROOT, WORKERS, job_env


def _run(tmp, flags, crash):
    argv = [sys.executable, "-m", "lightcc.runner.launch", "-np", "3", *flags, sys.executable,
            str(WORKERS / "checkpoint_worker.py"), str(tmp / "ckpt"), "23", str(crash), "5"]
    out = procs.run(argv, 240, job_env(), ROOT)  # a hang fails the test, every rank's stacks dumped
    return out.returncode, out.stdout + out.stderr


def _digests(text):
    return {m.group(1): m.group(2) for m in re.finditer(r"FINAL (\d) (\w+)", text)}


def test_killed_job_restarts_from_the_latest_checkpoint(tmp_path):
    code, text = _run(tmp_path / "a", [], crash=-1)
    assert code == 0, text[-3000:]
    unbroken = _digests(text)
    assert len(unbroken) == 3 and len(set(unbroken.values())) == 1

    report = tmp_path / "faults.json"
    code, text = _run(tmp_path / "b", ["--max-restarts", "2", "--fault-report", str(report)], crash=12)
    assert code == 0, text[-3000:]
    assert "restarting the job (1 of 2)" in text
    assert len(re.findall(r"RESUMED \d 10", text)) == 3  # every rank agreed on step 10 (saved at 5, 10)
    assert _digests(text) == unbroken  # model, optimizer, RNG and data position all came back
    faults = json.loads(report.read_text())["reports"]
    assert [(f["kind"], f["rank"], f["signal"], f["generation"]) for f in faults] == \
        [("process_exit", 1, "SIGKILL", 0)]
    assert sorted(os.listdir(tmp_path / "b" / "ckpt")) == ["step-15", "step-20"]  # keep=2, no .tmp left


def test_without_restarts_the_failure_is_final(tmp_path):
    code, text = _run(tmp_path, [], crash=7)
    assert code == 128 + 9, text[-3000:]
    assert "restarting" not in text
