"""lightcc.torch.DiLoCo with islands on real ranks: dense data parallelism inside an island, DiLoCo between islands.

Each case starts ranks of workers/diloco_islands_worker.py: 4 ranks as two islands of two, 3 ranks as
uneven islands (odd size: one island of two, one of one), islands="host" over fake host ids, and
islands="env:VAR" over each rank's value of VAR.
"""
from __future__ import annotations

import pytest

from tests.parallel.test_diloco import init_arg
from tests.ranks import run_ranks


@pytest.mark.parametrize("size,islands,style", [(4, "[[0,1],[2,3]]", "hvd"), (3, "[[0,1],[2]]", "c10d")])
def test_islands_equal_the_reference_and_bad_islands_fail_on_every_rank(size, islands, style):
    results = run_ranks("diloco_islands_worker.py", size, [init_arg(style), "reference,bad", islands], timeout=180)
    print("\n".join(line for line in results[0].stdout.splitlines() if line.startswith("ISLANDS")))


@pytest.mark.parametrize("size,islands", [(4, "[[0,1],[2,3]]"), (3, "[[0,1],[2]]")])
def test_each_codec_trains_with_islands_and_a_checkpoint_resumes_exactly(size, islands):
    results = run_ranks("diloco_islands_worker.py", size, ["hvd", "train,checkpoint", islands], timeout=180)
    print("\n".join(line for line in results[0].stdout.splitlines() if line.startswith("TRAIN")))


def test_host_islands_follow_the_host_ids():
    """Two fake hosts of 2 and 1 ranks: islands="host" makes them the islands and trains across them."""
    run_ranks("diloco_islands_worker.py", 3, ["hvd", "named,reference", "host"], timeout=180, hosts=["ha", "hb", "ha"])


def test_islands_named_by_an_environment_variable_and_re_formed_by_it():
    """islands='env:VAR' on one host: ranks 0 and 2 share a value, rank 1 has another; the islands follow the values,
    equal the reference, and re-form from them under the elastic handler (where lists of ranks are refused)."""
    regions = {r: {"LIGHTCC_TEST_REGION": region} for r, region in enumerate(["east", "west", "east"])}
    run_ranks("diloco_islands_worker.py", 3, [init_arg("c10d"), "named,reference,elastic", "env:LIGHTCC_TEST_REGION"],
              timeout=240, per_rank_env=regions)


def test_engine_topk_compresses_each_lane():
    env = {"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_DENSITY": "0.1", "LIGHT_TOPK_THRESHOLD": "512",
           "LIGHT_TOPK_WARMUP_STEPS": "0", "LIGHT_TOPK_CLIP": "0"}
    results = run_ranks("diloco_islands_worker.py", 4, ["hvd", "topk", "[[0,1],[2,3]]"], timeout=180, env=env)
    print("\n".join(line for line in results[0].stdout.splitlines() if line.startswith("TRAIN")))


def test_host_islands_under_the_elastic_handler():
    """islands='host' re-formed without a failure stays exact; a new worker copies its island (2 + 1 fake hosts)."""
    run_ranks("diloco_islands_worker.py", 3, ["hvd", "elastic", "host"], timeout=180, hosts=["ha", "hb", "ha"])


@pytest.mark.parametrize("size,style,layout", [(4, "hvd", "halves"), (3, "c10d", "halves"), (4, "c10d", "islands")])
def test_separate_diloco_on_each_process_set(size, style, layout):
    """Disjoint process sets (hvd's add_process_set, torch's new_group) each run their own DiLoCo at once, equal to
    the reference of their own ranks; islands inside a set are named by global ranks."""
    run_ranks("diloco_sets_worker.py", size, [init_arg(style), layout], timeout=180)
