"""The c10d backend's meeting keys in torch's store: fresh for every init, the secret agreed once."""
from __future__ import annotations

import pytest

dist = pytest.importorskip("torch.distributed")

from lightcc.torch.c10d import meeting  # noqa: E402


def test_each_init_meets_under_its_own_prefix_whatever_the_order():
    store = dist.HashStore()
    size = 3
    firsts = [meeting._fresh_prefix(store, size) for _ in range(size)]  # noqa: SLF001
    seconds = [meeting._fresh_prefix(store, size) for _ in range(size)]  # noqa: SLF001
    assert set(firsts) == {"lightcc/0/"}
    assert set(seconds) == {"lightcc/1/"}


def test_a_launcher_secret_stays_off_the_store_and_a_made_one_is_shared():
    store = dist.HashStore()
    env = {"LIGHTCC_JOB_SECRET": "s3cret"}
    assert meeting._agree_secret(store, "lightcc/0/", 0, env) == "s3cret"  # noqa: SLF001
    assert store.get("lightcc/0/secret") == b"-"
    assert meeting._agree_secret(store, "lightcc/0/", 1, env) == "s3cret"  # noqa: SLF001
    with pytest.raises(RuntimeError, match="LIGHTCC_JOB_SECRET"):
        meeting._agree_secret(store, "lightcc/0/", 1, {})  # noqa: SLF001
    made = meeting._agree_secret(store, "lightcc/1/", 0, {})  # noqa: SLF001
    assert len(made) == 64 and made != "s3cret"
    assert meeting._agree_secret(store, "lightcc/1/", 1, {}) == made  # noqa: SLF001
