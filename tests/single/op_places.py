"""Finds the places in the source that enumerate the ops (issue 45's count), for test_op_places.py.

A place enumerates the ops when it names three or more of them in one construct, so that a new op
would have to be added there too:
  - Python (ast, so comments and docstrings never count): one literal list, tuple, set or dict, one
    if/elif chain, or one run of consecutive assignments, whose string constants and identifiers
    name three or more ops (`allreduce`, `grouped_allreduce_async`, `ALLREDUCE` all name allreduce);
  - C++ (comments and string literals stripped): one brace-enclosed body (a switch, an enum, a
    table with its rows) holding three or more `OpType::k<Op>` / `k<Op> =` mentions directly (an
    `if (op == OpType::kJoin)` here and there is op-specific code, not an enumeration), or one
    `#define` whose body names three or more ops as identifiers (an X-macro list: `X(Allreduce, ...)`).
A public function per op (`def allgather`) is a call, not an enumeration, and is not counted.

    python tests/single/op_places.py        # every place, then the counts
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Iterator, List, Set, Tuple

ROOT = Path(__file__).resolve().parents[2]
PY_ROOTS = ("lightcc",)
CPP_ROOTS = ("csrc", "harp_plugin/src")
OP_LABELS = ("allreduce", "allgather", "broadcast", "alltoall", "reducescatter", "barrier", "join",
             "add_process_set", "remove_process_set")
_WORD = re.compile(r"(?i)(?:^|_|\b)(" + "|".join(OP_LABELS) + r")(?:_|\b|$)")
_CPP_NAMES = "Allreduce|Allgather|Broadcast|Alltoall|Reducescatter|Barrier|Join|AddProcessSet|RemoveProcessSet"
_CPP_OP = re.compile(r"OpType::k(\w+)|\bk(" + _CPP_NAMES + r")\s*=")
_CPP_OP_IDENTIFIER = re.compile(r"\bk?(" + _CPP_NAMES + r")\b")
_CPP_DEFINE = re.compile(r"^[ \t]*#[ \t]*define\b(?:[^\n]*\\\n)*[^\n]*", re.M)  # with its continued lines

Place = Tuple[str, int, Tuple[str, ...]]  # (path, line, the ops it names)


def _ops_in_text(text: str) -> Set[str]:
    return {m.group(1).lower() for m in _WORD.finditer(text)}


def _ops_in_node(node: ast.AST) -> Set[str]:
    found: Set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            found |= _ops_in_text(sub.value)
        elif isinstance(sub, ast.Name):
            found |= _ops_in_text(sub.id)
        elif isinstance(sub, ast.Attribute) and sub.attr != "join":  # str.join is no op
            found |= _ops_in_text(sub.attr)
    return found


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _python_places(path: Path) -> Iterator[Tuple[int, Set[str]]]:
    tree = ast.parse(path.read_text())
    seen: Set[int] = set()
    for node in ast.walk(tree):
        if id(node) in seen:
            continue
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            ops = _ops_in_node(node)
            if len(ops) >= 3:
                seen |= {id(n) for n in ast.walk(node)}
                yield node.lineno, ops
        elif isinstance(node, ast.If) and node.orelse:
            ops = _ops_in_node(node.test)
            tail = node.orelse
            while len(tail) == 1 and isinstance(tail[0], ast.If):  # elif
                seen.add(id(tail[0]))
                ops |= _ops_in_node(tail[0].test)
                tail = tail[0].orelse
            if len(ops) >= 3:
                yield node.lineno, ops
        for body in (getattr(node, "body", None), getattr(node, "orelse", None)):
            if isinstance(body, list):
                yield from _assignment_runs(body, seen)


def _assignment_runs(body: List[ast.stmt], seen: Set[int]) -> Iterator[Tuple[int, Set[str]]]:
    run: List[ast.stmt] = []
    for stmt in [*body, None]:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and len(_ops_in_node(stmt)) == 1:
            run.append(stmt)
            continue
        ops = set().union(*(_ops_in_node(s) for s in run)) if run else set()
        if len(ops) >= 3 and id(run[0]) not in seen:
            seen.add(id(run[0]))
            yield run[0].lineno, ops
        run = []


def _strip_cpp(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def _cpp_places(path: Path) -> Iterator[Tuple[int, Set[str]]]:
    text = _strip_cpp(path.read_text(errors="replace"))
    yield from _macro_places(text)
    # (opening line, whether the block is a table row, op mentions directly inside); a row's
    # mentions are its table's, code blocks (function bodies, ifs) keep theirs.
    stack: List[Tuple[int, bool, Set[str]]] = [(0, False, set())]
    line = 1
    mentions = {m.start(): (m.group(1) or m.group(2)).lower() for m in _CPP_OP.finditer(text)}
    for i, ch in enumerate(text):
        if ch == "\n":
            line += 1
        elif i in mentions:
            stack[-1][2].add(mentions[i])
        elif ch == "{":
            stack.append((line, text[:i].rstrip()[-1:] in ("{", ","), set()))
        elif ch == "}" and len(stack) > 1:
            opened, row, ops = stack.pop()
            if row:
                stack[-1][2].update(ops)
            elif len(ops) >= 3:
                yield opened, ops


def _macro_places(text: str) -> Iterator[Tuple[int, Set[str]]]:
    """`#define`s that list three or more ops (X-macros), each at its first line."""
    for m in _CPP_DEFINE.finditer(text):
        ops = {name.lower() for name in _CPP_OP_IDENTIFIER.findall(m.group(0))}
        if len(ops) >= 3:
            yield text.count("\n", 0, m.start()) + 1, ops


def places() -> Tuple[List[Place], List[Place]]:
    """(Python places, C++ places), each (path, line, ops named)."""
    py = [(str(p.relative_to(ROOT)), line, tuple(sorted(ops)))
          for root in PY_ROOTS for p in sorted((ROOT / root).rglob("*.py")) for line, ops in _python_places(p)]
    cpp = [(str(p.relative_to(ROOT)), line, tuple(sorted(ops)))
           for root in CPP_ROOTS for p in sorted((ROOT / root).rglob("*")) if p.suffix in (".h", ".cc", ".cu")
           for line, ops in _cpp_places(p)]
    return py, cpp


if __name__ == "__main__":
    py_places, cpp_places = places()
    for where, line, ops in [*cpp_places, *py_places]:
        print(f"{where}:{line}: {', '.join(ops)}")
    print(f"C++: {len(cpp_places)} places; Python: {len(py_places)} places", file=sys.stderr)
