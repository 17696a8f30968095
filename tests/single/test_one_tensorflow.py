"""One TensorFlow: no two installed distributions provide the `tensorflow` package, and the extra names one."""
from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _extras() -> dict:
    """pyproject.toml's [project.optional-dependencies]."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_the_tensorflow_extra_names_one_distribution():
    names = [req.split(">")[0].split("=")[0].split("<")[0].strip() for req in _extras()["tensorflow"]]
    assert [n for n in names if n.startswith("tensorflow")] == ["tensorflow"], names


def test_one_distribution_provides_tensorflow():
    providers = sorted(set(metadata.packages_distributions().get("tensorflow", [])))
    if not providers:
        pytest.skip("TensorFlow is not installed")
    assert len(providers) == 1, (
        f"{providers} all install the `tensorflow` package into one folder; uninstalling either breaks the "
        "other. Keep one: pip uninstall -y tensorflow-cpu && pip install --force-reinstall --no-deps tensorflow")
