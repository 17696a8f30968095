"""Member-only process sets (torch's new_group): only members call, every rank agrees on the id."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


@pytest.mark.parametrize("size", [3, 4])
def test_members_add_use_and_remove_a_set_while_others_call_nothing(size):
    for res in run_ranks("member_sets_worker.py", size, ["basic"], timeout=120):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("size", [3, 4])
def test_two_sets_made_at_once_by_different_members(size):
    for res in run_ranks("member_sets_worker.py", size, ["concurrent"], timeout=120):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


def test_members_that_disagree_on_the_ranks_all_get_an_error():
    for res in run_ranks("member_sets_worker.py", 3, ["mismatch"], timeout=120):
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


def test_a_dead_member_fails_the_add_and_the_others_within_the_timeout():
    timeout_s = 10
    results = run_ranks("member_sets_worker.py", 3, ["dead"], timeout=90, env={"LIGHTCC_TIMEOUT": str(timeout_s)},
                        expect_ok=False)
    assert results[2].returncode == 3
    for res in results[:2]:
        assert res.returncode == 0 and " 0 failed" in res.stdout, res.stdout + res.stderr
        elapsed = float(res.stdout.split("raised after ")[1].split("s:")[0])
        assert elapsed < timeout_s, res.stdout
