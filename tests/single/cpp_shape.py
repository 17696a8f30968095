"""Measures C++ classes by their declarations: member functions and data members, for test_code_shape.py.

A small reader, not a compiler: it strips comments and literals, finds every `class`/`struct` body
(nested ones too, each counted as its own class) and sorts the body's top-level declarations.
  - a method is a declared member function, constructors, destructors, operators and static ones
    included, `= delete`d ones not (they are the absence of a method);
  - a field is a non-static data member; `int a_, b_;` is two.
Type aliases, friends, enums, static data and nested types are neither.

    python tests/single/cpp_shape.py csrc/engine     # every class, widest first
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_HEAD = re.compile(r"\b(class|struct|union)\s+(?:alignas\s*\([^)]*\)\s*)?([A-Za-z_]\w*)\s*(final\s*)?(:[^;{]*)?\{")
_SKIP_DECL = re.compile(r"^(using|typedef|friend|static_assert|template\s*<[^>]*>\s*friend)\b")
_ACCESS = re.compile(r"^(public|private|protected)\s*:")


@dataclass
class CppClass:
    """One class or struct: where it is and what it declares."""

    name: str
    path: str
    line: int
    methods: list[str]
    fields: list[str]


def strip_code(text: str) -> str:
    """The text with comments, string and character literals and preprocessor lines blanked (offsets kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i) or (c == "#" and (i == 0 or text[i - 1] == "\n")):
            j = i
            while j < n and text[j] != "\n":
                if c == "#" and text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 1
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            delim = text[i + 2:text.index("(", i)]
            j = text.index(")" + delim + '"', i) + len(delim) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):  # 1'000 digit separators
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _match(text: str, at: int) -> int:
    """The offset just past the bracket that closes the one at `at`."""
    depth = 0
    for j in range(at, len(text)):
        if text[j] in _OPEN:
            depth += 1
        elif text[j] in _CLOSE:
            depth -= 1
            if depth == 0:
                return j + 1
    raise ValueError(f"unbalanced bracket at offset {at}")


def _top_level_split(decl: str, sep: str) -> list[str]:
    """`decl` split at `sep` outside (), [], {} and <> (angle brackets counted naively)."""
    parts, depth, start = [], 0, 0
    for j, c in enumerate(decl):
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(decl[start:j])
            start = j + 1
    parts.append(decl[start:])
    return parts


def _without_templates(decl: str) -> str:
    """`decl` with template argument lists removed (`std::function<bool()> f_` → `std::function f_`)."""
    decl = re.sub(r"\boperator\s*(<<=?|>>=?|<=>|<=|>=|<|>|->)", "operator@", decl)
    prev = None
    while prev != decl:
        prev = decl
        decl = re.sub(r"<[^<>;{}]*>", "", decl)
    return decl


def _declared_name(decl: str) -> str:
    """The name a member declaration introduces: a function's, before its `(`; else the last identifier."""
    plain = _without_templates(decl)
    paren = plain.find("(")
    head = plain[:paren] if paren >= 0 else re.split(r"[={]", plain, maxsplit=1)[0]
    names = re.findall(r"operator\s*\(\)|operator\s*[^\s\w(][^\s(]*|operator\b|~?[A-Za-z_]\w*", head)
    return names[-1] if names else plain.strip()[:40]


def _is_function(decl: str) -> bool:
    """A member function: a `(` right after its name, before any initialiser (`=` or `{`)."""
    plain = _without_templates(decl)
    init = re.search(r"[={]", plain)
    call = re.search(r"(~?[A-Za-z_]\w*|operator\s*\S+?|operator\s*\(\))\s*\(", plain)
    if not call or (init and init.start() < call.start()):
        return False
    before = plain[:call.start()].strip()
    # `Type name(args)` or `name(args)`; a member `Type (*fp)(int)` has a `(` first and is a field.
    return before == "" or bool(re.search(r"[\w>&*:\]]$", before)) or before.endswith("~")


def _members(body: str) -> Iterator[tuple[str, bool]]:
    """Top-level declarations of a class body as (text, has_body); nested class bodies are skipped."""
    i, n, start = 0, len(body), 0
    while i < n:
        c = body[i]
        if c in "([":
            i = _match(body, i)
            continue
        if c == "{":
            end = _match(body, i)
            head = body[start:i].strip()
            if re.match(r"^(class|struct|union|enum)\b", head) or head.startswith("template") and re.search(
                    r"\b(class|struct)\s+\w+\s*(final\s*)?(:[^;{]*)?$", head):
                # a nested type: skip it and its trailing `;` (or declarator list: `struct {..} x_;`)
                semi = body.find(";", end)
                tail = body[end:semi].strip() if semi >= 0 else ""
                if tail and not head.startswith("enum"):
                    for d in _top_level_split(tail, ","):
                        yield "anon " + d.strip(), False
                i = semi + 1 if semi >= 0 else end
                start = i
                continue
            if _is_function(head) or re.search(r"\)\s*(const|noexcept|override|final|->[^{]*|\s)*$", head) \
                    or re.search(r"\)\s*:\s*", head):
                yield head, True  # a function defined in the class (a constructor's init list included)
                i = end
                if i < n and body[i:].lstrip().startswith(";"):
                    i = body.index(";", i) + 1
                start = i
                continue
            i = end  # brace initialiser of a field
            continue
        if c == ";":
            yield body[start:i].strip(), False
            start = i + 1
        elif c == ":" and _ACCESS.match(body[start:i + 1].strip()):
            start = i + 1
        i += 1


def _classify(cls: CppClass, decl: str, has_body: bool) -> None:
    decl = re.sub(r"\s+", " ", decl).strip()
    while _ACCESS.match(decl):
        decl = _ACCESS.sub("", decl, count=1).strip()
    if not decl or _SKIP_DECL.match(decl) or re.match(r"^(enum|class|struct|union)\b[^(]*$", decl):
        return
    if decl.startswith("anon "):
        cls.fields.append(_declared_name(decl[5:]))
        return
    if has_body or _is_function(decl):
        if re.search(r"=\s*delete\s*$", decl):
            return
        cls.methods.append(_declared_name(decl))
        return
    if re.match(r"^(template\s*<.*>\s*)?(inline\s+)?(static|constexpr static|static constexpr)\b", decl):
        return
    for d in _top_level_split(decl, ","):
        if d.strip():
            cls.fields.append(_declared_name(d))


def classes_in(path: Path, root: Path) -> list[CppClass]:
    """Every class and struct defined in one source or header file."""
    text = strip_code(path.read_text(errors="replace"))
    found = []
    for m in _HEAD.finditer(text):
        before = text[max(0, m.start() - 40):m.start()]
        if re.search(r"\benum\s*$", before):
            continue
        brace = m.end() - 1
        end = _match(text, brace)
        cls = CppClass(m.group(2), str(path.relative_to(root)), text.count("\n", 0, m.start()) + 1, [], [])
        for decl, has_body in _members(text[brace + 1:end - 1]):
            _classify(cls, decl, has_body)
        found.append(cls)
    return found


def all_classes(folder: Path, root: Path) -> list[CppClass]:
    """Every class under `folder` (.h, .cc, .cu, .cuh)."""
    out: list[CppClass] = []
    for path in sorted(folder.rglob("*")):
        if path.suffix in (".h", ".cc", ".cu", ".cuh") and path.is_file():
            out += classes_in(path, root)
    return out


if __name__ == "__main__":
    repo = Path(__file__).resolve().parents[2]
    classes = [c for arg in (sys.argv[1:] or ["csrc"]) for c in all_classes(repo / arg, repo)]
    for c in sorted(classes, key=lambda c: (-len(c.methods), -len(c.fields))):
        print(f"{len(c.methods):3d} methods {len(c.fields):3d} fields  {c.name}  {c.path}:{c.line}")
