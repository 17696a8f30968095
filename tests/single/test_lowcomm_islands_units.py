"""DiLoCo's islands without ranks: the partition check, the slices each local rank owns, the islands' weights."""
from __future__ import annotations

import pytest

from lightcc.common.process_sets import global_process_set
from lightcc.torch.lowcomm.islands import Islands, check_spec


def test_a_partition_is_made_canonical():
    assert check_spec([[3, 2], [1, 0]], 4) == [[0, 1], [2, 3]]
    assert check_spec(None, 4) is None and check_spec("host", 4) == "host"
    assert check_spec("env:REGION", 4) == "env:REGION" and check_spec("env:_r2", 4) == "env:_r2"


@pytest.mark.parametrize("spec,needle", [
    ([[1, 2, 3]], "rank 0 is in no island"),
    ([[0, 1], [1, 2, 3]], "rank 1 is in island 0 and again in island 1"),
    ([[0, 1, 2, 3, 4]], "names 4, which is not a rank in [0, 4)"),
    ([[0, 1], []], "island 1 must be a non-empty list"),
    ([[0, 1.0], [2, 3]], "names 1.0"),
    ("hosts", "islands must be None, 'host'"),
    ([], "islands must be None, 'host'"),
    ("env:", "'env:VARIABLE'"),
    ("env:2ND", "got 'env:2ND'"),
    ("env:A-B", "got 'env:A-B'"),
])
def test_bad_partitions_are_refused(spec, needle):
    with pytest.raises(ValueError) as err:
        check_spec(spec, 4)
    assert needle in str(err.value)


def test_slices_cover_the_fragment_once_and_only_the_smallest_islands_size_is_cut():
    groups = [[0, 1, 2], [3, 4]]  # k = 2: local rank 2 of the first island owns no slice
    layouts = [Islands(groups, r) for r in range(5)]
    assert [x.shards for x in layouts] == [2] * 5
    assert [x.bounds(7) for x in layouts] == [(0, 4), (4, 7), (7, 7), (0, 4), (4, 7)]
    # per rank: island i of s_i ranks weighs s_i / N, so lane members scale by n * s_i / N
    assert [x.scale for x in layouts] == [2 * 3 / 5] * 3 + [2 * 2 / 5] * 2
    assert sum(layouts[r].scale for r in (0, 3)) / 2 == 1.0


def test_without_islands_a_rank_owns_the_whole_fragment_unscaled():
    alone = Islands.alone(3, 1)
    assert alone.bounds(10) == (0, 10) and alone.scale == 1.0 and alone.lane_set is global_process_set
    assert not alone.dense_inside and alone.lane_size == 3
