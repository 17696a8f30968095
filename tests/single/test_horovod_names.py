"""Every public name of Horovod 0.28.1's modules exists in the lightcc module the `horovod` alias maps it to.

The list is data (tests/data/horovod_names.json, read from Horovod's sources), so a name dropped
or never added shows up here instead of as a user's AttributeError.
"""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

DATA = json.loads((Path(__file__).resolve().parents[1] / "data" / "horovod_names.json").read_text())
MODULES = DATA["modules"]


def _lightcc_name(horovod_module: str) -> str:
    return "lightcc" + horovod_module[len("horovod"):]


def _not_required(module: str) -> set:
    skip = set(DATA["excluded"].get(module, {})) | set(DATA["pending"].get(module, {}))
    return set(MODULES[module]) if "*" in skip else skip


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_horovod_name_exists(module: str) -> None:
    required = [n for n in MODULES[module] if n not in _not_required(module)]
    if not required:
        return
    mod = importlib.import_module(_lightcc_name(module))
    missing = [n for n in required if not hasattr(mod, n)]
    assert not missing, f"{_lightcc_name(module)} lacks Horovod's {', '.join(missing)}"


def test_exceptions_name_real_horovod_names() -> None:
    for section in ("excluded", "pending"):
        for module, names in DATA[section].items():
            assert module in MODULES, f"{section}: {module} is not in the Horovod list"
            for name, reason in names.items():
                assert name == "*" or name in MODULES[module], f"{section}: {module}.{name} is not a Horovod name"
                assert reason.strip(), f"{section}: {module}.{name} needs a reason"


def test_list_covers_the_fronts() -> None:
    for module in ("horovod", "horovod.torch", "horovod.tensorflow", "horovod.tensorflow.keras", "horovod.keras",
                   "horovod.common.basics", "horovod.common.exceptions", "horovod.common.process_sets",
                   "horovod.common.util", "horovod.runner", "horovod.torch.elastic.sampler",
                   "horovod.torch.elastic.state"):
        assert MODULES.get(module), module
    assert len(MODULES["horovod.torch"]) >= 60 and "Adasum" in MODULES["horovod.torch"]
    assert "StateHandler" in MODULES["horovod.torch.elastic.state"]
    assert "HorovodAllreduce" in MODULES["horovod.torch.mpi_ops"]
    assert not any(n.startswith("Horovod") and n != "HorovodInternalError"
                   for n in DATA["excluded"].get("horovod.torch.mpi_ops", {})), "the autograd Functions exist now"
