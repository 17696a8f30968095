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


def _init_rank1_of_2(store, prefix: str) -> None:
    """Init as rank 1 of 2 through `store`, where rank 0 never comes, with a 1 s timeout."""
    from lightcc.common import basics, launch_env

    info = launch_env.placed("torch.distributed", 1, 2, (-1, -1), (-1, -1), "h", ("", 0, "a" * 64))
    basics.init_placed(info, flag_defaults={"LIGHTCC_TIMEOUT": "1"}, store=store, store_prefix=prefix)


def test_a_missing_peer_times_out_naming_torchs_store_and_the_key():
    from lightcc.common.basics import core

    with pytest.raises(RuntimeError, match=r"in torch's store .*; key 'lc/7/\w+' is still missing"):
        _init_rank1_of_2(dist.HashStore(), "lc/7/")
    assert not core().is_initialized()
    assert core().store_servers_started() == 0


def test_an_error_in_the_store_names_the_call_the_key_and_torchs_store():
    class Broken:  # torch's Store API, every call failing as when rank 0's store went away
        def _fail(self, *args):
            raise RuntimeError("connection reset by peer")

        set = get = add = check = _fail

    with pytest.raises(RuntimeError, match=r"of key 'lc/0/[\w/]+' in torch's store failed: .*reset by peer"):
        _init_rank1_of_2(Broken(), "lc/0/")
