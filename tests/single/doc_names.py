"""What names in the docs resolve to: Python references (static, no import), file names, store keys the code writes.

Pure helpers for tests/single/test_docs.py. Python references are resolved on the source text
(ast), so a page naming ``lightcc.tensorflow.x`` is checked without importing TensorFlow; only
``lightcc._core``, a compiled module, is imported.
"""
from __future__ import annotations

import ast
import importlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[2]

# `lightcc.x.y`, `benchmarks.x`, `testbed.x`, or an entry point `lightcc.x:f`; not a host name or a
# Kubernetes label (`lightcc.io/harp`), not part of a path or a longer word.
PYTHON_REF = re.compile(
    r"(?<![\w./-])((?:lightcc|benchmarks|testbed)(?:\.[A-Za-z_]\w*)+)(?::([A-Za-z_]\w*))?(?![\w/-])")
# A file named on its own in backticks, of a kind the repository holds as source (results and outputs,
# .json/.md/.txt, are the archive's: test_results_citations_exist_in_the_archives).
FILE_NAME = re.compile(r"`([\w.-]+\.(?:py|pth|toml|sh|cfg|cc|h|cu|cmake))`")
# A bare name of ours (`lightcc_c10d_autoload`): a module or a build target, which the tree must still have.
OWN_NAME = re.compile(r"`(lightcc_\w+)`")
STORE_KEY = re.compile(r"`(lightcc/[^`\s]*)`")


# ---- Python references ---------------------------------------------------------------------------

def _module_file(parts: Sequence[str]) -> Optional[Path]:
    base = ROOT.joinpath(*parts)
    for f in (base.with_suffix(".py"), base / "__init__.py"):
        if f.is_file():
            return f
    return None


def _top_statements(body: List[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's top-level statements, those under a top-level if/try (TYPE_CHECKING, ImportError) included."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _top_statements(node.body)
            yield from _top_statements(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]):
                yield from _top_statements(block)
        else:
            yield node


@lru_cache(maxsize=None)
def defined(path: Path) -> Dict[str, Optional[ast.ClassDef]]:
    """The names a module defines at top level (its classes with their node), star imports followed."""
    out: Dict[str, Optional[ast.ClassDef]] = {}
    for node in _top_statements(ast.parse(path.read_text()).body):
        if isinstance(node, ast.ClassDef):
            out[node.name] = node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = None
        elif isinstance(node, ast.Assign):
            out.update({n.id: None for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)})
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            out[node.target.id] = None
        elif isinstance(node, ast.Import):
            out.update({(a.asname or a.name).split(".")[0]: None for a in node.names})
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                source = _module_file(node.module.split(".")) if a.name == "*" and node.module else None
                if source is not None:
                    out.update(defined(source))
                elif a.name != "*":
                    out[a.asname or a.name] = None
    return out


def _class_has(node: ast.ClassDef, name: str, module: Dict[str, Optional[ast.ClassDef]]) -> bool:
    """Whether a class defines `name` or inherits it: from a base of the same module, checked the same way;
    from any other base but object, assumed (torch's and TensorFlow's classes are not read here)."""
    for member in node.body:
        if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and member.name == name:
            return True
        targets = member.targets if isinstance(member, ast.Assign) else [getattr(member, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id == "object":
            continue
        local = module.get(base.id) if isinstance(base, ast.Name) else None
        if local is None or _class_has(local, name, module):
            return True
    return False


def python_ref_resolves(dotted: str) -> bool:
    """Whether `dotted` (``lightcc.torch.ddp_hooks.TopkState.start``) names a module of this tree, or
    a name its module defines (a class member one level down)."""
    parts = dotted.split(".")
    if parts[:2] == ["lightcc", "_core"]:
        core = importlib.import_module("lightcc._core")
        return len(parts) == 2 or hasattr(core, parts[2])
    for i in range(len(parts), 0, -1):
        path = _module_file(parts[:i])
        if path is None:
            continue
        rest = parts[i:]
        if not rest:
            return True
        names = defined(path)
        if rest[0] not in names:
            return False
        node = names[rest[0]]
        return len(rest) == 1 or node is None or _class_has(node, rest[1], names)
    return False


def python_refs(text: str) -> List[str]:
    """Every Python reference in a page, an entry point's ``module:function`` as ``module.function``."""
    return [m.group(1) + (f".{m.group(2)}" if m.group(2) else "") for m in PYTHON_REF.finditer(text)]


# ---- store keys ----------------------------------------------------------------------------------

class RecordingStore:
    """A torch store stand-in that keeps every key written: what the backend's meeting code writes, run for real."""

    def __init__(self) -> None:
        self.data: Dict[str, bytes] = {}

    def add(self, key: str, amount: int) -> int:
        value = int(self.data.get(key, b"0")) + amount
        self.data[key] = str(value).encode()
        return value

    def set(self, key: str, value: str) -> None:
        self.data[key] = value.encode() if isinstance(value, str) else value

    def get(self, key: str) -> bytes:
        return self.data[key]


def written_store_keys() -> List[str]:
    """The keys lightcc writes in torch's store: an init's meeting (the backend's, and the DDP hooks' under
    their prefix) and an any-source announcement, each made by the code that makes them. The engine's own
    bootstrap keys under an init's prefix are written in C++ and named by no page."""
    from lightcc.torch import ddp_hooks
    from lightcc.torch.c10d import any_source, meeting

    keys: List[str] = []
    for outer in ("", ddp_hooks._STORE_PREFIX):  # noqa: SLF001
        store = RecordingStore()
        prefix = meeting._fresh_prefix(store, 2)  # noqa: SLF001
        meeting._agree_secret(store, prefix, 0, {})  # noqa: SLF001
        keys += [outer + k for k in store.data]
    store = RecordingStore()
    any_source.Announcements(store, any_source.queue_prefix(store, 2)).announce(0, 1, 0, 0)
    return keys + list(store.data)


def names_written_key(cited: str, keys: Sequence[str]) -> bool:
    """Whether a cited key (``lightcc/<n>/``: `<...>` one path part, a trailing / a prefix) matches a written one."""
    pattern = re.escape(cited).replace(r"\.\.\.", ".*")
    pattern = re.sub(r"<[^>]*>", "[^/]+", pattern.replace(r"\<", "<").replace(r"\>", ">"))
    pattern += ".*" if cited.endswith("/") else ""
    return any(re.fullmatch(pattern, k) for k in keys)
