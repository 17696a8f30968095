"""horovod.data via lightcc (BaseDataLoader, AsyncDataLoaderMixin); the alias resolves Horovod's non-torch modules."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lightcc.data import AsyncDataLoaderMixin, BaseDataLoader

ROOT = Path(__file__).resolve().parents[2]


class _Loader(BaseDataLoader):
    def __init__(self, n: int, fail_at: int = -1) -> None:
        self.n = n
        self.fail_at = fail_at

    def __len__(self) -> int:
        return self.n

    def _iterate(self):
        for i in range(self.n):
            if i == self.fail_at:
                raise RuntimeError(f"batch {i} is unreadable")
            yield i


class _AsyncLoader(AsyncDataLoaderMixin, _Loader):
    pass


def test_base_loader_yields_processed_batches() -> None:
    assert list(_Loader(4)) == [0, 1, 2, 3]
    with pytest.raises(NotImplementedError):
        len(BaseDataLoader())


@pytest.mark.parametrize("queue_size", [0, 1, 3])
def test_async_loader_runs_every_epoch_in_order(queue_size: int) -> None:
    loader = _AsyncLoader(async_loader_queue_size=queue_size, n=5)
    try:
        assert [list(loader) for _ in range(3)] == [[0, 1, 2, 3, 4]] * 3
    finally:
        loader.close_async_loader()
    if queue_size:
        assert not loader.thread.is_alive()


def test_async_loader_reraises_the_loader_threads_error() -> None:
    loader = _AsyncLoader(async_loader_queue_size=2, n=5, fail_at=3)
    with pytest.raises(RuntimeError, match="batch 3 is unreadable"):
        list(loader)
    loader.close_async_loader()


def test_close_stops_a_thread_blocked_on_a_full_queue() -> None:
    loader = _AsyncLoader(async_loader_queue_size=1, n=1000)
    it = iter(loader)
    assert next(it) == 0
    loader.close_async_loader()
    assert not loader.thread.is_alive()


def test_alias_resolves_horovods_non_torch_modules() -> None:
    names = json.loads((ROOT / "tests" / "data" / "horovod_names.json").read_text())["modules"]
    modules = [m for m in names if "torch" not in m and "keras" not in m and "tensorflow" not in m]
    modules += ["horovod.tensorflow.elastic", "horovod.tensorflow.gradient_aggregation",
                "horovod.tensorflow.gradient_aggregation_eager", "horovod.tensorflow.keras.elastic"]
    code = ("import importlib, sys, lightcc.horovod_alias as a\na.install(force=True)\n"
            f"for m in {modules!r}:\n"
            "    mod = importlib.import_module(m)\n"
            "    assert mod.__name__.startswith('lightcc'), (m, mod.__name__)\n"
            "print('ok', len(sys.argv))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]
