"""docs/design.md's new-collective checklist against the code: the places listing the ops (at most 3), the calls."""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import op_places  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# Issue 45: at most this many places in the whole source tree list the ops (op_list.h, op_runs.cc, calls.py).
MAX_PLACES = 3
FRONT_MODULES = {"numpy": "lightcc/numpy/mpi_ops.py", "torch": "lightcc/torch/mpi_ops.py",
                 "tensorflow": "lightcc/tensorflow/mpi_ops.py"}


def _checklist() -> list:
    """The files named by the numbered list under "### Adding a collective"."""
    text = (ROOT / "docs" / "design.md").read_text()
    section = text.split("### Adding a collective", 1)[1].split("\n### ", 1)[0]
    items = re.findall(r"^\d+\. `([^`]+)`", section, re.M)
    assert items, "docs/design.md lost its numbered checklist"
    return items


def test_every_place_that_lists_the_ops_is_on_the_checklist():
    listed = set(_checklist())
    py, cpp = op_places.places()
    places = {where for where, _, _ in [*py, *cpp]}
    missing = sorted(places - listed)
    assert not missing, f"these list the ops but docs/design.md's checklist does not name them: {missing}"


def test_the_ops_are_listed_in_at_most_three_places():
    py, cpp = op_places.places()
    found = [f"{where}:{line}" for where, line, _ in [*cpp, *py]]
    assert len(found) <= MAX_PLACES, found


def test_the_finder_counts_an_x_macro_list(tmp_path):
    """A `#define` row list names the ops as identifiers, not `OpType::k...`: it is a place all the same."""
    header = tmp_path / "ops.h"
    header.write_text("// a list\n#define OPS(X) \\\n  X(Allreduce, 0) \\\n  X(Barrier, 1) \\\n  X(Join, 2)\n"
                      "#define ONE(X) X(Allreduce, 0)\n")
    assert list(op_places._cpp_places(header)) == [(2, {"allreduce", "barrier", "join"})]


def test_checklist_names_only_files_that_exist():
    for item in _checklist():
        if "<label>" in item:  # the new op's own test files
            assert list(ROOT.glob(item.replace("<label>", "*"))), item
        else:
            assert (ROOT / item).is_file(), item


def test_every_switch_over_the_op_is_on_the_checklist():
    """A `case OpType::` outside the listed files would be a switch the list forgets."""
    listed = set(_checklist())
    found = {str(p.relative_to(ROOT)) for root in op_places.CPP_ROOTS for p in (ROOT / root).rglob("*")
             if p.suffix in (".h", ".cc", ".cu") and "case OpType::" in p.read_text(errors="replace")}
    assert found and found <= listed, sorted(found - listed)


def _defined(path: str) -> set:
    tree = ast.parse((ROOT / path).read_text())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} | {
        a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}


@pytest.mark.parametrize("front", sorted(FRONT_MODULES))
def test_fronts_define_the_calls_the_table_gives_them(front):
    """Each call calls.py gives a front is a `def` (or an import) a reader finds in its module, and each
    public `def` named like an op's call is in the table (so the table, the fronts and __all__ agree)."""
    from lightcc.common import calls

    defined = _defined(FRONT_MODULES[front])
    if front == "tensorflow":  # its reducing calls are reduce.py's
        defined |= _defined("lightcc/tensorflow/reduce.py")
    wanted = set(calls.names(front))
    assert wanted <= defined, sorted(wanted - defined)
    looks_like_a_call = set()
    for name in defined - wanted:
        try:
            calls.label_of(name)
            looks_like_a_call.add(name)
        except KeyError:
            pass
    assert not looks_like_a_call, f"{front} defines calls calls.py does not list: {sorted(looks_like_a_call)}"
