"""No dependency cycles: C++ includes between folders and between files, Python imports between modules.

C++: every `#include "..."` of csrc, harp_plugin/src and harp_plugin/include, resolved against the
include roots the build uses (csrc, harp_plugin/include, harp_plugin/src, the including file's
folder); system headers are not followed. Checked between units — a header and its sources are
one unit (engine/mesh.h and engine/mesh.cc are engine/mesh), so mesh.cc including net_peers.h
while net_peers.cc includes mesh.h is a cycle — and between folders (csrc/engine,
csrc/transport/shm, harp_plugin/include/harp ...).
Python: every `import` and `from ... import` of the modules under lightcc/, at module level or
inside a function alike (a deferred import is still a dependency), resolved to the module it
names; importing a package counts as importing its __init__.
A module reaching into a package only through `from lightcc.x import y`, where y is a submodule,
depends on the submodule lightcc.x.y.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, Iterable, Set

ROOT = Path(__file__).resolve().parents[2]
CPP_ROOTS = ("csrc", "harp_plugin/src", "harp_plugin/include")
CPP_INCLUDE_DIRS = ("csrc", "harp_plugin/include", "harp_plugin/src")
CPP_SUFFIXES = (".h", ".cc", ".cu", ".cuh")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)

Graph = Dict[str, Set[str]]

# Cycles known and not yet broken, each with its owner's reason. The tests fail on any other cycle,
# and when one of these is gone (then delete it here).
# Entries look like ["dir/a", "dir/b"] (a sorted component, as find_cycles returns it).
KNOWN_UNIT_CYCLES: list[list[str]] = []


def find_cycles(graph: Graph) -> list[list[str]]:
    """Every strongly connected component with more than one node (or a self-loop), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(root: str) -> None:
        # Tarjan's algorithm, iterative (import graphs are deep enough to hit the recursion limit).
        work: list[tuple[str, Iterable[str]]] = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    comp.append(n)
                    if n == node:
                        break
                if len(comp) > 1 or node in graph.get(node, ()):
                    out.append(sorted(comp))

    for n in sorted(graph):
        if n not in index:
            visit(n)
    return out


def cpp_file_graph() -> Graph:
    """File → files it includes (paths relative to the repository), for every C++ source and header."""
    files = [p for r in CPP_ROOTS for p in sorted((ROOT / r).rglob("*")) if p.suffix in CPP_SUFFIXES and p.is_file()]
    graph: Graph = {}
    for path in files:
        rel = str(path.relative_to(ROOT))
        deps = graph.setdefault(rel, set())
        for inc in _INCLUDE.findall(path.read_text(errors="replace")):
            for base in (path.parent, *(ROOT / d for d in CPP_INCLUDE_DIRS)):
                target = (base / inc).resolve()
                if target.is_file() and ROOT in target.parents:
                    dep = str(target.relative_to(ROOT))
                    if dep != rel:
                        deps.add(dep)
                    break
    return graph


def unit_graph(files: Graph) -> Graph:
    """The file graph collapsed onto units: a path without its suffix (a header with its sources)."""
    graph: Graph = {}
    for src, deps in files.items():
        node = str(Path(src).with_suffix(""))
        graph.setdefault(node, set()).update(str(Path(d).with_suffix("")) for d in deps)
        graph[node].discard(node)
    return graph


def folder_graph(files: Graph) -> Graph:
    """The file graph collapsed onto folders (a file's own folder is not an edge)."""
    graph: Graph = {}
    for src, deps in files.items():
        node = graph.setdefault(str(Path(src).parent), set())
        for dep in deps:
            folder = str(Path(dep).parent)
            if folder != str(Path(src).parent):
                node.add(folder)
    return graph


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def python_import_graph(package: str = "lightcc", root: Path = ROOT) -> Graph:
    """Module → modules of `package` (a folder of `root`) it imports, anywhere in its body."""
    paths = {_module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}
    graph: Graph = {}

    def resolve(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    for mod, path in paths.items():
        deps = graph.setdefault(mod, set())
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                # `from pkg import sub` names the submodule when there is one, else pkg itself.
                targets = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in paths else prefix for a in node.names]
            for t in targets:
                if t.split(".")[0] != package:
                    continue
                dep = resolve(t)
                if dep and dep != mod:
                    deps.add(dep)
    return graph


def _describe(graph: Graph, cycle: list[str]) -> str:
    members = set(cycle)
    edges = sorted(f"{a} -> {b}" for a in cycle for b in graph.get(a, ()) if b in members)
    return "cycle among " + ", ".join(cycle) + ":\n    " + "\n    ".join(edges)


def test_cycle_finder_finds_and_only_finds_cycles():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set(), "c": {"b"}}) == []
    assert find_cycles({"a": {"a"}}) == [["a"]]


def test_import_graph_sees_every_form_of_import(tmp_path: Path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for name in ("__init__", "a", "b", "c", "d", "sub/__init__", "sub/e"):
        (pkg / f"{name}.py").write_text("")
    (pkg / "a.py").write_text("import os\nfrom pkg import b\n\ndef f():\n    import pkg.c\n")
    (pkg / "b.py").write_text("from .sub import e\nfrom . import d as dd\n")
    (pkg / "sub" / "e.py").write_text("from ..c import thing\nfrom pkg.sub import missing_name\n")
    graph = python_import_graph("pkg", tmp_path)
    assert graph["pkg.a"] == {"pkg.b", "pkg.c"}  # module level, and inside a function
    assert graph["pkg.b"] == {"pkg.sub.e", "pkg.d"}  # relative, `from package import module`
    assert graph["pkg.sub.e"] == {"pkg.c", "pkg.sub"}  # a name from a package is its __init__
    (pkg / "c.py").write_text("def g():\n    from pkg import a\n")
    assert find_cycles(python_import_graph("pkg", tmp_path)) == [["pkg.a", "pkg.b", "pkg.c", "pkg.sub.e"]]


def test_include_graph_joins_a_header_and_its_sources():
    files = {"x/m.h": set(), "x/m.cc": {"x/m.h", "x/n.h"}, "x/n.h": set(), "x/n.cc": {"x/n.h", "x/m.h"}}
    assert find_cycles(unit_graph(files)) == [["x/m", "x/n"]]
    assert find_cycles(files) == []
    assert folder_graph({"a/m.cc": {"b/n.h"}, "b/n.h": set(), "b/n.cc": {"a/m.h"}, "a/m.h": set()}) == {
        "a": {"b"}, "b": {"a"}}


def test_no_cpp_unit_cycles():
    graph = unit_graph(cpp_file_graph())
    assert len(graph) > 150  # the scan found the sources
    cycles = [c for c in find_cycles(graph) if c not in KNOWN_UNIT_CYCLES]
    assert not cycles, "\n".join(_describe(graph, c) for c in cycles)
    gone = [c for c in KNOWN_UNIT_CYCLES if c not in find_cycles(graph)]
    assert not gone, f"no longer a cycle, delete it from KNOWN_UNIT_CYCLES: {gone}"


def test_no_cpp_folder_cycles():
    graph = folder_graph(cpp_file_graph())
    assert {"csrc/engine", "csrc/algorithms", "csrc/device", "csrc/common"} <= set(graph)
    cycles = find_cycles(graph)
    assert not cycles, "\n".join(_describe(graph, c) for c in cycles)


def test_no_python_import_cycles():
    graph = python_import_graph()
    assert len(graph) > 100
    cycles = find_cycles(graph)
    assert not cycles, "\n".join(_describe(graph, c) for c in cycles)


def test_the_installed_package_imports_nothing_outside_it():
    """lightcc/ ships in the wheel; benchmarks/, testbed/ and tests/ do not (what needs root stays in the checkout)."""
    outside = ("benchmarks", "testbed", "tests")
    found = []
    for path in sorted((ROOT / "lightcc").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names if n.split(".")[0] in outside]
    assert found == []
