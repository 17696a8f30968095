"""torch finds the "lightcc" backend through its autoload entry point, without `import lightcc`."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_setup_declares_the_torch_backends_entry_point():
    text = (ROOT / "setup.py").read_text()
    assert re.search(r'"torch\.backends":\s*\[\s*"lightcc = lightcc_c10d_autoload:register"', text)
    assert '"lightcc_c10d_autoload"' in text  # shipped as a top-level module


def test_init_process_group_lightcc_without_importing_lightcc(tmp_path):
    # The entry point as an installed lightcc declares it, in a distribution of its own on the path.
    info = tmp_path / "lightcc_autoload_check-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lightcc-autoload-check\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text("[torch.backends]\nlightcc = lightcc_c10d_autoload:register\n")
    script = (
        "import sys, torch, torch.distributed as dist\n"
        "assert 'lightcc' not in sys.modules, 'the autoload must not import lightcc'\n"
        "assert 'LIGHTCC' in dist.Backend._plugins\n"
        "dist.init_process_group('lightcc', init_method='tcp://127.0.0.1:0', rank=0, world_size=1)\n"
        "t = torch.ones(3); dist.all_reduce(t); assert t.tolist() == [1.0, 1.0, 1.0]\n"
        "dist.destroy_process_group(); print('OK', dist.is_initialized())\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIGHTCC_", "HOROVOD_", "TORCH_DEVICE"))}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "OK False" in out.stdout, out.stdout + out.stderr
