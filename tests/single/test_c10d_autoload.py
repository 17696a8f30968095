"""torch finds the "lightcc" backend through its autoload entry point, without `import lightcc.torch`."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = "lightcc.c10d_autoload:autoload"


def test_pyproject_declares_the_torch_backends_entry_point_inside_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["torch.backends"] == {"lightcc": ENTRY_POINT}
    assert "py_modules" not in (ROOT / "setup.py").read_text()  # nothing beside the package


def test_init_process_group_lightcc_without_importing_lightccs_torch_front(tmp_path):
    # The entry point as an installed lightcc declares it, in a distribution of its own on the path.
    info = tmp_path / "lightcc_autoload_check-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lightcc-autoload-check\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(f"[torch.backends]\nlightcc = {ENTRY_POINT}\n")
    script = (
        "import sys, torch, torch.distributed as dist\n"
        "loaded = [m for m in ('lightcc._core', 'lightcc.numpy', 'lightcc.torch') if m in sys.modules]\n"
        "assert not loaded, f'the autoload must load neither the core nor a front: {loaded}'\n"
        "assert 'LIGHTCC' in dist.Backend._plugins\n"
        "dist.init_process_group('lightcc', init_method='tcp://127.0.0.1:0', rank=0, world_size=1)\n"
        "t = torch.ones(3); dist.all_reduce(t); assert t.tolist() == [1.0, 1.0, 1.0]\n"
        "import lightcc.torch\n"  # registers again: a no-op, the same backend
        "assert dist.Backend._plugins['LIGHTCC'].creator_fn.__module__ == 'lightcc.c10d_autoload'\n"
        "dist.destroy_process_group(); print('OK', dist.is_initialized())\n"
    )
    # The shared environment may hold an editable lightcc with entry points of its own: torch would load
    # those too. TORCH_DEVICE_BACKEND_AUTOLOAD stays on (its default); only this distribution may name
    # lightcc's entry point first on the path, which is what this test reads.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIGHTCC_", "HOROVOD_", "TORCH_DEVICE"))}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "OK False" in out.stdout, out.stdout + out.stderr


def test_a_failing_registration_leaves_import_torch_working():
    code = (
        "import torch.distributed as dist\n"
        "def broken(*a, **k): raise RuntimeError('no')\n"
        "dist.Backend.register_backend = broken\n"
        "from lightcc import c10d_autoload\n"
        "c10d_autoload.autoload()\n"
        "print('QUIET')\n"
    )
    # torch's own autoload off: nothing registers "lightcc" before the broken registration is tried.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "QUIET" in out.stdout, out.stdout + out.stderr
