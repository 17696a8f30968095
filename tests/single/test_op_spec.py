"""The Python op spec is the core's table: codes, reduce ops, dtypes and rules agree, and nothing restates them."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from lightcc.common import dtypes, op_spec, ops
from lightcc.common.native import core

ROOT = Path(__file__).resolve().parents[2]


def test_op_constants_are_the_rows_codes():
    written = _written_op_constants()
    for row in op_spec.OPS:
        if row.name in written:
            assert getattr(ops, row.name) == row.code, row.name
    assert [row.code for row in op_spec.OPS] == list(range(len(op_spec.OPS)))


def _written_op_constants() -> dict:
    """NAME -> label of each `NAME = _spec.code("label")` line of ops.py."""
    text = (ROOT / "lightcc" / "common" / "ops.py").read_text()
    return dict(re.findall(r'^([A-Z][A-Z_]+) = _spec\.code\("(\w+)"\)$', text, re.M))


def test_op_constants_are_written_out_for_every_op_the_code_names():
    """Each op constant has a line a reader or an IDE finds, named as its row names the op; every `ops.NAME` of
    an op that the package or the tests use is one of them (a new op needs none until some code names it)."""
    rows = {row.name: row.label for row in op_spec.OPS}
    written = _written_op_constants()
    assert written and all(rows.get(name) == label for name, label in written.items()), written
    used = {name for path in [*(ROOT / "lightcc").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
            for name in re.findall(r"\b_?ops\.([A-Z][A-Z_]+)\b", path.read_text()) if name in rows}
    assert used and used <= set(written), used - set(written)


def test_reduce_ops_and_dtypes_come_from_the_core():
    table = core().op_spec()
    for row in table["reduce_ops"]:
        assert getattr(ops, row["name"]) == row["code"]
    for row in table["dtypes"]:
        assert getattr(dtypes, row["name"].upper()) == row["code"]
        assert dtypes.CODE_NAMES[row["code"]] == row["name"]


def test_rules_read_from_rows():
    with pytest.raises(ValueError, match="allgather needs a tensor with at least one dimension"):
        op_spec.check_shape(ops.ALLGATHER, [])
    op_spec.check_shape(ops.ALLREDUCE, [])
    with pytest.raises(ValueError, match="reducescatter does not support Adasum"):
        op_spec.check_reduce_op(ops.REDUCESCATTER, ops.Adasum)
    op_spec.check_reduce_op(ops.BROADCAST, ops.Adasum)  # no reduction: ignored
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
        (ops.REDUCESCATTER, "x", 16, 32, dtypes.FLOAT32, [4], ops.Sum, 0.5, 2.0, 3, 0, 7)
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
    assert op_args.control(ops.BARRIER, "b", 1).process_set_id == 1
    with pytest.raises(ValueError, match="allreduce moves a tensor"):
        op_args.control(ops.ALLREDUCE, "x")
