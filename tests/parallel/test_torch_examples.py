"""The PyTorch examples under lightccrun, and an unmodified Horovod script through --as-horovod."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from testbed import procs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "pytorch"
WORKERS = Path(__file__).resolve().parent / "workers"


def env(**extra: str) -> dict:
    """testbed/procs.py's one environment rule, plus `extra`."""
    return procs.base_env(extra)


def lightccrun(args, timeout: float, **extra: str) -> subprocess.CompletedProcess:
    """`lightccrun ARGS` to the end; past `timeout` its ranks' stacks are dumped and it fails (testbed/procs.py)."""
    return procs.run([sys.executable, "-m", "lightcc.runner", *args], timeout, env(**extra), ROOT)


def test_digits_reaches_target_accuracy():
    proc = lightccrun(["-np", "2", sys.executable, str(EXAMPLES / "pytorch_digits.py"), "--epochs", "10",
                       "--target-accuracy", "0.95"], timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "reached the target 0.95" in proc.stdout, proc.stdout


def test_synthetic_benchmark_lightcc_and_ddp(tmp_path):
    for mode in ("", "--compare-ddp"):  # lightcc alone; lightcc and DDP (gloo) interleaved
        out = tmp_path / f"result{mode}.json"
        args = ["-np", "2", sys.executable, str(EXAMPLES / "pytorch_synthetic_benchmark.py"), "--model", "resnet50",
                "--batch-size", "1", "--num-warmup-batches", "1", "--num-batches-per-iter", "1", "--num-iters", "2",
                "--json", str(out)] + ([mode] if mode else [])
        proc = lightccrun(args, timeout=400)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "| resnet50" in proc.stdout and "25.56" in proc.stdout, proc.stdout
        result = json.loads(out.read_text())
        results = result if mode else [result]
        assert [r["backend"] for r in results] == (["lightcc", "ddp-gloo"] if mode else ["lightcc"])
        for r in results:
            assert r["ranks"] == 2 and r["total"] > 0 and len(r["per_rank_all"]) == 2 and r["cpu_seconds_per_batch"] > 0
        if mode:
            assert "lightcc / DDP throughput ratio" in proc.stdout, proc.stdout


def _alias_site(tmp_path: Path) -> Path:
    """A site directory holding the alias's .pth as `pip install` places it (the module is lightcc's).

    A sitecustomize on PYTHONPATH processes it with site.addsitedir at start-up, exactly as the
    interpreter processes site-packages; unlike a user site it also works inside a venv.
    """
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    shutil.copy(ROOT / "packaging" / "lightcc_horovod_alias.pth", site_dir)
    (site_dir / "sitecustomize.py").write_text(
        "import os, site\nsite.addsitedir(os.path.dirname(os.path.abspath(__file__)))\n")
    return site_dir


def test_unmodified_horovod_script_under_as_horovod(tmp_path):
    path = f"{_alias_site(tmp_path)}{os.pathsep}{ROOT}"
    script = str(WORKERS / "torch_horovod_script_worker.py")
    proc = lightccrun(["--as-horovod", "-np", "2", sys.executable, script], timeout=240, PYTHONPATH=path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("module lightcc.torch") == 2 and "ok=True" in proc.stdout, proc.stdout
    # Without the flag, `import horovod` fails as it would without Horovod installed.
    proc = lightccrun(["-np", "2", sys.executable, script], timeout=120, PYTHONPATH=path)
    assert proc.returncode != 0 and "No module named 'horovod'" in proc.stdout + proc.stderr
