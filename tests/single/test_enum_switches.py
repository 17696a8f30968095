"""No silent defaults: switches over enums name every value, and adding one fails the build.

The core, the plugin and the CUDA host code build with -Werror=switch (CMakeLists.txt), which
only bites where a switch has no `default:`. So (1) no switch over an enum may have one, and
(2) compiling with a test-only extra enumerator (LIGHTCC_TEST_EXTRA_REDUCE_OP, _DTYPE, _OP) must
fail at every place that dispatches on that enum, and succeed without it.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("csrc", "harp_plugin/src", "harp_plugin/include")

# The only `default:` labels left switch over plain integers or characters, not enums.
NON_ENUM_SWITCHES = {
    ("csrc/kernels/reduce_loops.h", "n"),                 # number of sources: 1..4 fused, more blocked
    ("csrc/bindings/submissions.cc", "format[0]"),        # a buffer-protocol format character
    ("csrc/transport/net/net_plugin.cc", "result"),       # an int from a foreign plugin
}

# (define, enumerator, file compiled, file whose switch must be reported)
ADDED_VALUES = [
    ("LIGHTCC_TEST_EXTRA_REDUCE_OP", "kTestReduceOp", "csrc/common/dtype.cc", "csrc/common/dtype.cc"),
    ("LIGHTCC_TEST_EXTRA_REDUCE_OP", "kTestReduceOp", "csrc/kernels/dispatch.cc", "csrc/kernels/dispatch.cc"),
    ("LIGHTCC_TEST_EXTRA_REDUCE_OP", "kTestReduceOp", "csrc/kernels/reduce_generic.cc", "csrc/kernels/reduce_loops.h"),
    ("LIGHTCC_TEST_EXTRA_REDUCE_OP", "kTestReduceOp", "csrc/kernels/reduce_scaled_int.cc",
     "csrc/kernels/reduce_scaled_int.cc"),
    ("LIGHTCC_TEST_EXTRA_REDUCE_OP", "kTestReduceOp", "csrc/device/nccl.cc", "csrc/device/nccl.cc"),
    ("LIGHTCC_TEST_EXTRA_REDUCE_OP", "kTestReduceOp", "csrc/cuda/reduce.cu", "csrc/cuda/reduce.cu"),
    ("LIGHTCC_TEST_EXTRA_DTYPE", "kTestDtype", "csrc/common/dtype.cc", "csrc/common/dtype.cc"),
    ("LIGHTCC_TEST_EXTRA_DTYPE", "kTestDtype", "csrc/kernels/reduce_generic.cc", "csrc/kernels/reduce_loops.h"),
    ("LIGHTCC_TEST_EXTRA_DTYPE", "kTestDtype", "csrc/kernels/integer_average.cc", "csrc/kernels/integer_average.cc"),
    ("LIGHTCC_TEST_EXTRA_DTYPE", "kTestDtype", "csrc/kernels/topk_merge.cc", "csrc/kernels/topk_merge.cc"),
    ("LIGHTCC_TEST_EXTRA_DTYPE", "kTestDtype", "csrc/device/nccl.cc", "csrc/device/nccl.cc"),
    ("LIGHTCC_TEST_EXTRA_DTYPE", "kTestDtype", "csrc/cuda/runtime.cu", "csrc/cuda/runtime.cu"),
    ("LIGHTCC_TEST_EXTRA_OP", "kTestGather", "csrc/engine/op_runs.cc", "csrc/engine/op_runs.cc"),
]


def _switch_subject(text: str, at: int) -> str:
    """The expression of the innermost `switch (...)` whose body holds offset `at`."""
    depth = 0
    i = at
    while i > 0:
        i -= 1
        if text[i] == "}":
            depth += 1
        elif text[i] == "{":
            if depth == 0:
                head = re.search(r"switch\s*\((.*)\)\s*$", text[max(0, i - 200):i], re.S)
                if head:
                    return head.group(1).strip()
            else:
                depth -= 1
    return ""


def test_no_default_label_in_a_switch_over_an_enum() -> None:
    found = []
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".cc", ".h", ".cu"):
                continue
            text = path.read_text()
            for m in re.finditer(r"\bdefault\s*:", text):
                rel = str(path.relative_to(ROOT))
                subject = _switch_subject(text, m.start())
                if (rel, subject) not in NON_ENUM_SWITCHES:
                    line = text.count("\n", 0, m.start()) + 1
                    found.append(f"{rel}:{line}: default: in switch ({subject})")
    assert not found, "name every enum value instead of `default:`:\n" + "\n".join(found)
    # The allowlist holds only what still exists, so it cannot hide a new entry.
    for rel, subject in NON_ENUM_SWITCHES:
        text = (ROOT / rel).read_text()
        assert any(_switch_subject(text, m.start()) == subject for m in re.finditer(r"\bdefault\s*:", text)), rel


def _compiler(source: str) -> Optional[List[str]]:
    if source.endswith(".cu"):
        nvcc = shutil.which("nvcc")
        # sm_80 only: the host code is what -Werror=switch checks; one architecture is enough.
        return [nvcc, "-std=c++17", "-arch=sm_80", "-Xcompiler=-Werror=switch", "-c", "-o", os.devnull] if nvcc else None
    cxx = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
    return [cxx, "-std=c++17", "-fsyntax-only", "-Werror=switch"] if cxx else None


@functools.lru_cache(maxsize=None)  # each file's plain build once, however many enums it switches on
def _compile(source: str, defines: Tuple[str, ...]) -> subprocess.CompletedProcess:
    cmd = _compiler(source)
    if cmd is None:
        pytest.skip(f"no compiler for {source} (nvcc is needed for .cu files)")
    args = [*cmd, f"-I{ROOT / 'csrc'}", f"-I{ROOT / 'harp_plugin' / 'include'}", *[f"-D{d}" for d in defines],
            str(ROOT / source)]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "LC_ALL": "C"})


@pytest.mark.parametrize("define,value,source,reported", ADDED_VALUES,
                         ids=[f"{v}-{Path(s).name}" for _, v, s, _ in ADDED_VALUES])
def test_an_added_enum_value_fails_to_compile_where_it_is_not_handled(define, value, source, reported) -> None:
    plain = _compile(source, ())
    assert plain.returncode == 0, f"{source} does not build as it is:\n{plain.stderr[-3000:]}"
    added = _compile(source, (define,))
    assert added.returncode != 0, f"{source} still compiles with {define}: a switch handles {value} silently"
    pattern = re.compile(rf"{re.escape(reported)}:\d+:\d+: error: enumeration value .{value}. not handled in switch")
    assert pattern.search(added.stderr), f"no -Werror=switch error for {value} in {reported}:\n{added.stderr[-3000:]}"
