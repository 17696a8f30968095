"""The Python op spec is the core's table: codes, reduce ops, dtypes and rules agree, and nothing restates them."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from lightcc.common import dtypes, op_spec, ops
from lightcc.common.native import core

ROOT = Path(__file__).resolve().parents[2]


def test_codes_are_the_rows_positions():
    assert [row.code for row in op_spec.OPS] == list(range(len(op_spec.OPS)))
    assert all(op_spec.code(row.label) == row.code and op_spec.row_of(row.code) is row for row in op_spec.OPS)


def test_no_op_code_constants():
    """Code that needs an op's code asks `op_spec.code("<label>")`: no module restates the ops as constants
    (ALLREDUCE = ..., one more list to extend per op; issue 45)."""
    names = {row.name for row in op_spec.OPS}
    assert not names & set(vars(ops)), names & set(vars(ops))
    used = {f"{path.relative_to(ROOT)}: {name}"
            for path in [*(ROOT / "lightcc").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
            for name in re.findall(r"\b_?ops\.([A-Z][A-Z_]+)\b", path.read_text()) if name in names}
    assert not used, used


def test_bus_bandwidth_kind_is_stated_for_data_ops_only():
    for row in op_spec.OPS:
        assert (row.bus_bw != "none") == row.moves_data, row.label
        assert row.bus_bw in ("none", "whole", "chunked", "reduced"), row.label


def test_reduce_ops_and_dtypes_come_from_the_core():
    table = core().op_spec()
    for row in table["reduce_ops"]:
        assert getattr(ops, row["name"]) == row["code"]
    for row in table["dtypes"]:
        assert getattr(dtypes, row["name"].upper()) == row["code"]
        assert dtypes.CODE_NAMES[row["code"]] == row["name"]


def test_rules_read_from_rows():
    with pytest.raises(ValueError, match="allgather needs a tensor with at least one dimension"):
        op_spec.check_shape(op_spec.code("allgather"), [])
    op_spec.check_shape(op_spec.code("allreduce"), [])
    with pytest.raises(ValueError, match="reducescatter does not support Adasum"):
        op_spec.check_reduce_op(op_spec.code("reducescatter"), ops.Adasum)
    op_spec.check_reduce_op(op_spec.code("broadcast"), ops.Adasum)  # no reduction: ignored
    process_set_ops = {row.label for row in op_spec.OPS if row.changes_sets}
    assert process_set_ops == {"add_process_set", "remove_process_set"}


def test_no_front_restates_codes():
    """Op and dtype codes appear as literals nowhere in the Python package but the spec's readers."""
    pattern = re.compile(r"=\s*range\(\d+\)")
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "lightcc").rglob("*.py") if pattern.search(p.read_text())]
    assert not offenders, offenders


def test_builders_check_their_rows_and_fill_their_fields():
    from lightcc.common import op_args

    t = op_args.Adapted("x", 16, 32, dtypes.FLOAT32, [4], 0, 7)
    args = op_args.reducescatter(t, ops.Sum, 0.5, 2.0, 3)
    assert (args.op, args.name, args.in_ptr, args.out_ptr, args.dtype, list(args.shape), args.reduce_op,
            args.prescale, args.postscale, args.process_set_id, args.device, args.stream) == \
        (op_spec.code("reducescatter"), "x", 16, 32, dtypes.FLOAT32, [4], ops.Sum, 0.5, 2.0, 3, 0, 7)
    assert op_args.broadcast(t, 2).root == 2 and op_args.alltoall(t, [1, 3]).aux == [1, 3]
    scalar = t._replace(shape=[])
    op_args.allreduce(scalar, ops.Sum)  # allreduce takes a scalar
    for build in (op_args.allgather, op_args.alltoall):
        with pytest.raises(ValueError, match="needs a tensor with at least one dimension"):
            build(scalar)
    with pytest.raises(NotImplementedError, match="reducescatter does not support Adasum"):
        op_args.reducescatter(t, ops.Adasum)
    with pytest.raises(ValueError, match="unknown reduction op"):
        op_args.allreduce(t, 99)
    assert op_args.control(op_spec.code("barrier"), "b", 1).process_set_id == 1
    with pytest.raises(ValueError, match="allreduce moves a tensor"):
        op_args.control(op_spec.code("allreduce"), "x")
