"""The `import horovod` alias: off by default, on with LIGHTCC_AS_HOROVOD=1 unless Horovod is installed, force wins."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The source tree first on the path, then a site directory holding the alias's .pth: addsitedir
# processes it as the interpreter processes site-packages after `pip install .`.
PTH = ROOT / "packaging" / "lightcc_horovod_alias.pth"
PROBE = (
    "import site, sys; sys.path.insert(0, sys.argv[1]); site.addsitedir(sys.argv[2])\n"
    "import horovod.torch as hvd\n"
    "print('MODULE', hvd.__name__)\n"
)


def site_dir(tmp_path: Path) -> str:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    shutil.copy(PTH, site)
    return str(site)


def run(tmp_path: Path, value, fake_horovod: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("LIGHTCC_AS_HOROVOD", "PYTHONPATH")}
    if value is not None:
        env["LIGHTCC_AS_HOROVOD"] = value
    if fake_horovod:  # a stand-in for a real Horovod install
        pkg = tmp_path / "real" / "horovod" / "torch"
        pkg.mkdir(parents=True, exist_ok=True)
        (pkg.parent / "__init__.py").write_text("")
        (pkg / "__init__.py").write_text("")
        env["PYTHONPATH"] = str(tmp_path / "real")
    return subprocess.run([sys.executable, "-c", PROBE, str(ROOT), site_dir(tmp_path)], check=False, env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_alias_off_without_the_variable(tmp_path):
    proc = run(tmp_path, None)
    assert proc.returncode != 0 and "No module named 'horovod'" in proc.stderr
    assert run(tmp_path, "0").returncode != 0


def test_alias_on(tmp_path):
    proc = run(tmp_path, "1")
    assert proc.returncode == 0 and "MODULE lightcc.torch" in proc.stdout, proc.stderr


def test_real_horovod_wins_unless_forced(tmp_path):
    proc = run(tmp_path, "1", fake_horovod=True)
    assert proc.returncode == 0 and "MODULE horovod.torch" in proc.stdout, proc.stderr
    proc = run(tmp_path, "force", fake_horovod=True)
    assert proc.returncode == 0 and "MODULE lightcc.torch" in proc.stdout, proc.stderr


def test_bad_value_is_reported(tmp_path):
    proc = run(tmp_path, "maybe")
    assert proc.returncode != 0 and "LIGHTCC_AS_HOROVOD='maybe'" in proc.stderr


def test_internal_paths_import(tmp_path):
    code = PROBE + (
        "from horovod.torch.mpi_ops import synchronize, _basics\n"
        "from horovod.torch.compression import Compressor\n"
        "from horovod.common.util import env, _cache, extension_available, split_list\n"
        "from horovod.common.elastic import ObjectState\n"
        "import horovod, lightcc.torch\n"
        "assert hvd is lightcc.torch and lightcc.torch.__spec__.name == 'lightcc.torch'\n"
        "assert hasattr(horovod, '__version__') and callable(_basics._get_process_set_ids_and_ranks)\n"
        "print('PATHS OK')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["LIGHTCC_AS_HOROVOD"] = "1"
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT), site_dir(tmp_path)], check=False, env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert "PATHS OK" in proc.stdout, proc.stderr


def test_torch_modules_horovod_ships_resolve(tmp_path):
    """Every torch module of Horovod 0.28.1 that lightcc implements imports under the alias as lightcc's own."""
    code = PROBE + (
        "import importlib, lightcc.torch.elastic.sampler, lightcc.torch.elastic.state\n"
        "from horovod.torch.elastic.sampler import ElasticSampler\n"
        "from horovod.torch.elastic.state import StateHandler, TorchState, get_handler_registry, set_handler_registry\n"
        "from horovod.torch.mpi_ops import HorovodAllreduce, HorovodGroupedReducescatter\n"
        "import horovod.torch.elastic.state as st\n"
        "assert st is lightcc.torch.elastic.state and ElasticSampler is hvd.elastic.ElasticSampler\n"
        "assert TorchState is hvd.elastic.TorchState and issubclass(st.ModelStateHandler, StateHandler)\n"
        "for name in ('horovod.torch', 'horovod.torch.mpi_ops', 'horovod.torch.compression', 'horovod.torch.elastic',\n"
        "             'horovod.torch.elastic.sampler', 'horovod.torch.elastic.state'):\n"
        "    assert importlib.import_module(name) is importlib.import_module('lightcc' + name[len('horovod'):]), name\n"
        "print('TORCH MODULES OK')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["LIGHTCC_AS_HOROVOD"] = "1"
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT), site_dir(tmp_path)], check=False, env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert "TORCH MODULES OK" in proc.stdout, proc.stderr


def test_the_startup_hook_loads_no_core_and_no_framework(tmp_path):
    """The .pth runs at every interpreter start: it imports the alias module, and neither the core nor a front."""
    code = ("import site, sys; sys.path.insert(0, sys.argv[1]); site.addsitedir(sys.argv[2])\n"
            "heavy = [m for m in ('lightcc._core', 'lightcc.numpy', 'lightcc.torch') if m in sys.modules]\n"
            "print('HOOK', 'lightcc.horovod_alias' in sys.modules, heavy)\n")
    for value in (None, "1"):
        env = {k: v for k, v in os.environ.items() if k not in ("LIGHTCC_AS_HOROVOD", "PYTHONPATH")}
        if value is not None:
            env["LIGHTCC_AS_HOROVOD"] = value
        proc = subprocess.run([sys.executable, "-c", code, str(ROOT), site_dir(tmp_path)], check=False, env=env,
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert "HOOK True []" in proc.stdout, (value, proc.stdout, proc.stderr)
