"""Flags vs readers: every variable a launcher exports or a doc lists is read by something, and unknown ones warn.

Readers are the core's flag table (``csrc/common/config.cc``, the one place C++ reads the environment),
HARP's parameter parser (``harp_plugin/src/params.cc``, for ``HARP_*``) and the Python readers listed in
``lightcc/common/env_names.py``, with those of the build, tools and tests (each checked against the file it
names). The checker works on source
text, so a test can run it on a copy with one read removed and see that read reported.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Mapping

from lightcc.common import elastic_channel, env_names
from lightcc.common.native import core
from lightcc.runner import env_flags, horovodrun, launch, plan
from lightcc.runner.hosts import HostSlots, assign_slots

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120
FULL_NAME = re.compile(r"^(?:HOROVOD|LIGHTCC|LIGHT|HARP)_[A-Z0-9]+(?:_[A-Z0-9]+)*$")
NAME_IN_TEXT = re.compile(r"(?<![A-Za-z0-9_])(?:HOROVOD|LIGHTCC|LIGHT|HARP)_[A-Z0-9]+(?:_[A-Z0-9]+)*(?![A-Za-z0-9_])")
DOC_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


# ---- the checker: pure functions over source text ----


def table_names(config_cc: str) -> set[str]:
    """The variables of config.cc's flag table: each row opens with ``{{"NAME",``."""
    return set(re.findall(r'\{\{"([A-Z][A-Z0-9_]*)",', config_cc))


def literal_names(source: str) -> set[str]:
    """Every string constant of a Python source that is a whole variable name of ours."""
    return {
        n.value
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and FULL_NAME.match(n.value)
    }


def python_readers(reads: Mapping[str, str], sources: Mapping[str, str]) -> set[str]:
    """The names of ``reads`` (name -> file) whose file really names them."""
    return {name for name, path in reads.items() if name in literal_names(sources[path])}


def tool_readers(reads: Mapping[str, str], sources: Mapping[str, str]) -> set[str]:
    """The names of ``reads`` whose file (shell, CMake, C++ or Python) names them as a whole word."""
    return {name for name, path in reads.items() if re.search(rf"(?<![A-Z0-9_]){name}(?![A-Z0-9_])", sources[path])}


def readers(config_cc: str, params_cc: str, sources: Mapping[str, str]) -> set[str]:
    harp = set(re.findall(r'"(HARP_[A-Z0-9_]+)"', params_cc))
    return (
        table_names(config_cc)
        | harp
        | python_readers(env_names.PYTHON_READS, sources)
        | tool_readers(env_names.TOOL_READS, sources)
    )


def unread(names: Mapping[str, str], read: Iterable[str]) -> list[str]:
    """``name (where)`` for every name nothing reads."""
    read = set(read)
    return sorted(f"{n} ({where})" for n, where in names.items() if n not in read)


def repo_sources() -> dict[str, str]:
    paths = {*env_names.PYTHON_READS.values(), *env_names.TOOL_READS.values()}
    return {path: (ROOT / path).read_text() for path in paths}


def repo_readers() -> set[str]:
    return readers(
        (ROOT / "csrc/common/config.cc").read_text(), (ROOT / "harp_plugin/src/params.cc").read_text(), repo_sources()
    )


def _sample(flag: env_flags.EnvFlag):
    if flag.action:
        return True
    if flag.choices:
        return flag.choices[0]
    return {int: 1, float: 1.0}.get(flag.type, "eth0")


def exported() -> dict[str, str]:
    """Every variable lightccrun, ``hvd.run`` (which runs lightccrun), horovodrun and the elastic driver export."""
    out: dict[str, str] = {}
    for flag in env_flags.FLAGS:
        if not flag.refused:
            out.update({(k or flag.env): f"lightccrun {flag.flags[0]}" for k in flag.to_env(_sample(flag))})
    for flag in horovodrun.FLAGS:
        if flag.handling in (horovodrun.ENV, horovodrun.NOTED):
            out[flag.env] = f"horovodrun {flag.names[-1]}"
    slots = assign_slots([HostSlots("localhost", 1)], 1)
    launches = plan.build_launches(slots, ["true"], {}, {}, "s", ("127.0.0.1", 1), {"localhost"}, "", 22, "/")
    out.update({k: "lightccrun (every rank)" for k in launches[0].env})
    for path in sorted((ROOT / "lightcc" / "runner").rglob("*.py")):
        out.update({n: str(path.relative_to(ROOT)) for n in literal_names(path.read_text())})
    out.update({n: "elastic driver" for n in (elastic_channel.ADDR_VAR, elastic_channel.WORKER_VAR)})
    return {k: v for k, v in out.items() if FULL_NAME.match(k)}


def documented(pages: Iterable[Path] = DOC_PAGES) -> dict[str, str]:
    return {n: p.name for p in pages for n in NAME_IN_TEXT.findall(p.read_text())}


# ---- the checks ----


def test_table_parser_reads_what_the_core_declares():
    assert table_names((ROOT / "csrc/common/config.cc").read_text()) == {f["name"] for f in core().flags()}


def test_every_python_reader_names_its_variable():
    sources = repo_sources()
    missing = [f"{n} ({p})" for n, p in env_names.PYTHON_READS.items() if n not in literal_names(sources[p])]
    missing += [f"{n} ({p})" for n, p in env_names.TOOL_READS.items() if n not in tool_readers({n: p}, sources)]
    assert missing == []


def test_every_exported_variable_is_read():
    assert unread(exported(), repo_readers() | set(env_names.FOR_SCRIPTS)) == []


def test_every_documented_variable_is_read_or_documented_as_ignored():
    allowed = repo_readers() | set(env_names.FOR_SCRIPTS) | set(env_names.IGNORED)
    assert unread(documented(), allowed) == []


def test_every_variable_lightcc_names_is_known():
    """A new Python reader must be listed in env_names, or init would warn about its own variable."""
    known = env_names.known(f["name"] for f in core().flags())
    files = list((ROOT / "lightcc").rglob("*.py"))
    names = {
        n: str(p.relative_to(ROOT))
        for p in files
        for n in literal_names(p.read_text())
        if n.startswith(env_names.PREFIXES) and not n.startswith(tuple(env_names.IGNORED_PREFIXES))
    }
    assert unread(names, known) == []


def test_ignored_and_script_variables_are_documented_and_really_unread():
    flags_page = (ROOT / "docs" / "flags.md").read_text()
    for name, note in [*env_names.IGNORED.items(), *env_names.FOR_SCRIPTS.items()]:
        assert f"| `{name}` | {note} |" in flags_page, f"{name}'s row in docs/flags.md differs from env_names"
    assert set(env_names.IGNORED) & repo_readers() == set(), "an ignored variable is read after all"


def test_launcher_page_flags_are_lightccrun_options():
    options = set(launch.build_parser()._option_string_actions)
    text = (ROOT / "docs" / "launcher.md").read_text()
    flags = {f for span in re.findall(r"`([^`]+)`", text) for f in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", span)}
    assert sorted(flags - options) == []


# ---- the checker fails when a read is removed ----


def test_a_dropped_table_row_is_reported():
    config = (ROOT / "csrc/common/config.cc").read_text()
    row = config.index('{{"HOROVOD_CYCLE_TIME"')
    dropped = config[:row] + config[config.index('{{"', row + 3) :]  # the row, up to the next one
    read = readers(dropped, (ROOT / "harp_plugin/src/params.cc").read_text(), repo_sources())
    assert "HOROVOD_CYCLE_TIME" not in read
    assert [r.split(" ")[0] for r in unread(exported(), read | set(env_names.FOR_SCRIPTS))] == ["HOROVOD_CYCLE_TIME"]
    assert any(r.startswith("HOROVOD_CYCLE_TIME ") for r in unread(documented(), read))


def test_a_dropped_python_read_is_reported():
    sources = repo_sources()
    path = env_names.PYTHON_READS["LIGHTCC_RENDEZVOUS_FILE"]
    sources[path] = sources[path].replace('"LIGHTCC_RENDEZVOUS_FILE"', '"SOMETHING_ELSE"')
    read = readers(
        (ROOT / "csrc/common/config.cc").read_text(), (ROOT / "harp_plugin/src/params.cc").read_text(), sources
    )
    reported = unread(documented(), read | set(env_names.FOR_SCRIPTS) | set(env_names.IGNORED))
    assert [r.split(" ")[0] for r in reported] == ["LIGHTCC_RENDEZVOUS_FILE"]


def test_an_export_nobody_reads_is_reported():
    names = {**exported(), "HOROVOD_HIERARCHICAL_ALLGATHER": "lightccrun --hierarchical-allgather (before)"}
    assert unread(names, repo_readers() | set(env_names.FOR_SCRIPTS)) == [
        "HOROVOD_HIERARCHICAL_ALLGATHER (lightccrun --hierarchical-allgather (before))"
    ]


# ---- unknown variables warn at init ----


def _clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LIGHTCC_", "LIGHT_", "HOROVOD_", "OMPI_", "PMI_", "PMIX_", "PYTHONWARNINGS"))
    }
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def test_unread_lists_only_unknown_names():
    environ = {
        "HOROVOD_FUSION_THRESHOLD": "1",
        "LIGHTCC_RANK": "0",
        "HOROVOD_ELASTIC": "1",
        "HOROVOD_CONTROLLER": "gloo",
        "HOROVOD_WITH_PYTORCH": "1",
        "LIGHT_TOPK_DENSTY": "0.1",
        "HOROVOD_FOO": "1",
        "LIGHTCCX": "1",
        "PATH": "/",
    }
    assert env_names.unread(environ, ["HOROVOD_FUSION_THRESHOLD"]) == ["HOROVOD_FOO", "LIGHT_TOPK_DENSTY"]


def test_init_warns_once_naming_unknown_variables():
    code = "import lightcc as hvd\nfor _ in range(2):\n    hvd.init()\n    hvd.shutdown()\nprint('DONE')\n"
    env = _clean_env(
        HOROVOD_FOO_BAR="1",
        LIGHT_TOPK_DENSTY="0.1",
        LIGHTCC_TIMEOUT="30",
        HOROVOD_CONTROLLER="gloo",
        HOROVOD_WITH_PYTORCH="1",
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, check=False, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert out.returncode == 0 and "DONE" in out.stdout, out.stdout + out.stderr
    lines = [ln for ln in out.stderr.splitlines() if "nothing in lightcc reads" in ln]
    assert len(lines) == 1, out.stderr
    assert "HOROVOD_FOO_BAR, LIGHT_TOPK_DENSTY" in lines[0] and "rank 0" in lines[0]
    for quiet in ("LIGHTCC_TIMEOUT", "HOROVOD_CONTROLLER", "HOROVOD_WITH_PYTORCH"):
        assert quiet not in lines[0]


def test_horovods_2d_variables_turn_on_the_2d_allreduce():
    # The mode each variable sets; whether 2D then runs is the topology's call (one process: never).
    code = "import lightcc as hvd\nfrom lightcc.common.native import core\nhvd.init()\nprint('2D', core().two_d_info()['mode'])\n"
    for env, mode in (
        [{}, "auto"],
        [{"HOROVOD_TORUS_ALLREDUCE": "1"}, "1"],
        [{"HOROVOD_HIERARCHICAL_ALLREDUCE": "1"}, "1"],
        [{"HOROVOD_TORUS_ALLREDUCE": "0"}, "auto"],  # Horovod's default: asks for nothing
        [{"HOROVOD_HIERARCHICAL_ALLREDUCE": "0"}, "0"],  # horovodrun's --no-hierarchical-allreduce
    ):
        out = subprocess.run(
            [sys.executable, "-c", code],
            env=_clean_env(**env),
            check=False,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert f"2D {mode}\n" in out.stdout, (env, out.stdout + out.stderr)


def test_init_is_silent_without_unknown_variables():
    code = "import lightcc as hvd\nhvd.init()\nhvd.shutdown()\n"
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        env=_clean_env(HOROVOD_CYCLE_TIME="0"),
        check=False,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert out.returncode == 0 and "nothing in lightcc reads" not in out.stderr, out.stderr


def test_only_rank_0_warns():
    code = "import lightcc as hvd\nhvd.init()\nprint('UP', hvd.rank())\nhvd.shutdown()\n"
    out = subprocess.run(
        [sys.executable, "-m", "lightcc.runner.launch", "-np", "2", sys.executable, "-c", code],
        env=_clean_env(HOROVOD_NO_SUCH_FLAG="1"),
        check=False,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=ROOT,
    )
    assert out.returncode == 0 and out.stdout.count("UP") == 2, out.stdout + out.stderr
    lines = [
        ln for ln in (out.stdout + out.stderr).splitlines() if "nothing in lightcc reads HOROVOD_NO_SUCH_FLAG" in ln
    ]
    assert len(lines) == 1 and lines[0].startswith("[0]"), lines
