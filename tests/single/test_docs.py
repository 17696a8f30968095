"""The documentation: the site builds with `mkdocs build --strict`, and every command the README,
the docs and deploy/README.md show runs as written (or, for long jobs, in a quick form), or at
least parses with the real tool's own parser; every console script answers --help; every flag, file,
Python reference and store key the pages name exists in the code (tests/single/doc_names.py)."""
from __future__ import annotations

import fnmatch
import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lightcc.common import env_names
from lightcc.runner import env_flags, horovodrun, launch
from tests.single import doc_names

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 300
PAGES = [ROOT / "README.md", ROOT / "deploy" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OURS = ("lightccrun", "horovodrun", "lightcc-bench", "harp-bench", "harp-setup")
# Documented commands that run for real, mapped to the form run here ("" = exactly as written).
# Each key must appear verbatim in a page, so a changed command cannot slip past this table.
RUN = {
    "lightccrun --check-build": "",
    "harp-bench --help": "",
    "harp-setup --output /tmp/harp-profile": "harp-setup --output {tmp}/harp-profile",
    "python deploy/kubernetes/validate.py": "",
    "lightccrun -np 2 python examples/pytorch/pytorch_synthetic_benchmark.py --model resnet50 --batch-size 16 "
    "--num-iters 3": "lightccrun -np 2 python examples/pytorch/pytorch_synthetic_benchmark.py --model resnet50 "
    "--batch-size 2 --num-warmup-batches 0 --num-batches-per-iter 1 --num-iters 1",
    "lightcc-bench allreduce --np 2 --compare gloo,mpi --json ar.json --plot ar.png":
    "lightcc-bench allreduce --np 2 --compare gloo,mpi --json {tmp}/ar.json --plot {tmp}/ar.png --sizes 4K,64K "
    "--iters 5 --warmup 1 --no-progress",
    "lightcc-bench latency --np 2": "lightcc-bench latency --np 2 --iters 50 --warmup 5 --no-progress",
    "lightcc-bench simulate --model resnet101 --cluster vpc25 --json sim.json --plot sim.png":
    "lightcc-bench simulate --model resnet101 --cluster vpc25 --json {tmp}/sim.json --plot {tmp}/sim.png",
}
# Benchmark suites run from the checkout (`python -m SUITE ...`) -> the module whose build_parser() parses them.
SUITES = {"benchmarks.scale": "benchmarks.scale.cli", "benchmarks.quality": "benchmarks.quality.__main__"}
MODULES = {  # console script -> `python -m` form (this tree, not the installed scripts)
    "lightccrun": "lightcc.runner.launch",
    "horovodrun": "lightcc.runner.horovodrun",
    "lightcc-bench": "lightcc.bench",
    "harp-bench": "lightcc.harp.bench",
    "harp-setup": "lightcc.harp.setup_tool",
}


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("LIGHTCC_", "HOROVOD_", "OMPI_", "PMIX_"))}
    out["PYTHONPATH"] = str(ROOT)
    out.update(extra)
    return out


def documented_commands() -> list[tuple[str, str]]:
    """``(page, command)`` for every command line in a bash/console block of the pages."""
    found = []
    for page in PAGES:
        # Every fenced block, whatever its language, so a ```python block's closing fence opens nothing.
        for lang, block in re.findall(r"```(\w*)\n(.*?)```", page.read_text(), re.DOTALL):
            if lang not in ("bash", "console", "sh", ""):
                continue
            for line in block.replace("\\\n", " ").splitlines():
                line = re.sub(r"\s+#.*$", "", line).strip()
                for part in (p.strip() for p in line.split("&&")):
                    if not part or part.startswith("#") or "[--" in part or " ... " in part:
                        continue  # comments, usage synopses ("tool [--flag N]") and elided commands ("tool ... --flag")
                    # Unlabelled blocks also hold output and code: take only our own tools' lines.
                    if lang or part.split()[0] in OURS or part.startswith("python -m lightcc"):
                        found.append((f"{page.parent.name}/{page.name}", part))
    return found


def as_argv(command: str, tmp: Path) -> list[str]:
    words = shlex.split(command.format(tmp=tmp))
    if words[0] in MODULES:
        return [sys.executable, "-m", MODULES[words[0]], *words[1:]]
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    return words


def test_site_builds_strictly(tmp_path):
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                         cwd=ROOT, env=env(NO_MKDOCS_2_WARNING="1"), check=False, capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "site" / "api" / "index.html").read_text().count("DistributedOptimizer") > 0


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    missing = [p.name for p in (ROOT / "docs").glob("*.md") if f" {p.name}" not in nav]
    assert missing == []


def test_migration_table_covers_every_horovodrun_flag():
    page = (ROOT / "docs" / "migrating.md").read_text()
    for flag in horovodrun.FLAGS:
        for name in flag.names:
            assert f"`{name}`" in page, name


TOP_DIRS = ("csrc", "lightcc", "tests", "examples", "benchmarks", "harp_plugin", "deploy", "docs", "cmake", ".ci",
            "packaging", "testbed")


def _expand(path: str) -> list[str]:
    """``a/{b,c}.py`` -> ``a/b.py``, ``a/c.py``."""
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [p for alt in m.group(1).split(",") for p in _expand(path[: m.start()] + alt + path[m.end():])]


def test_cited_repository_paths_exist():
    """Every repository path a page cites (a file, a folder, a glob, or a stem like csrc/engine/executor) exists."""
    gone = []
    for page in PAGES:
        text = page.read_text()
        for cited in re.findall(r"(?<![\w/.:-])((?:%s)/[\w./{},*<>-]*[\w*}/])" % "|".join(map(re.escape, TOP_DIRS)), text):
            for path in _expand(cited):
                if "<" in path:
                    continue  # a placeholder: benchmarks/<suite>/README.md
                if not (list(ROOT.glob(path)) or list(ROOT.glob(path.rstrip("/") + "*"))):
                    if not (path.startswith("lightcc/") and doc_names.names_written_key(path, _store_keys())):
                        gone.append(f"{page.name}: {path}")
    assert gone == []


# ---- names the pages cite exist in the code ------------------------------------------------------

# The pages these checks read: the docs, and the READMEs beside the code they describe.
NAMED_IN = PAGES + sorted(ROOT.glob("benchmarks/**/README.md")) + sorted(ROOT.glob("examples/**/README.md")) + \
    sorted(ROOT.glob("testbed/**/README.md"))
# Files the pages name that are deliberately not in this tree, each with why.
ABSENT_FILES = {
    "train.py": "a user's training script in example commands",
    "test_distributed_spawn.py": "PyTorch's own suite, which benchmarks/compat runs against lightcc",
    **{name: "Horovod's own TensorFlow tests, which benchmarks/compat runs against lightcc" for name in (
        "test_tensorflow.py", "test_tensorflow2_keras.py", "test_tensorflow_process_sets.py",
        "test_process_sets_static.py", "test_timeline.py")},
}


def _store_keys() -> list[str]:
    pytest.importorskip("torch")
    return doc_names.written_store_keys()


def _known_flags() -> set[str]:
    """Every variable something reads (the core's table, HARP's parameters, the Python readers, the
    build and tools), or that the docs name on purpose though lightcc ignores it (env_names.IGNORED)."""
    from tests.single import test_flags_readers as readers

    return readers.repo_readers() | set(env_names.FOR_SCRIPTS) | set(env_names.IGNORED)


def unknown_flags(text: str, known: set[str]) -> list[str]:
    from tests.single import test_flags_readers as readers

    return sorted({n for n in readers.NAME_IN_TEXT.findall(text) if n not in known
                   and not n.startswith(tuple(env_names.IGNORED_PREFIXES))})


def test_named_flags_are_read_by_the_code():
    """A LIGHT_/LIGHTCC_/HOROVOD_/HARP_ variable a page names is one lightcc reads, or one it lists as ignored."""
    known = _known_flags()
    assert unknown_flags("set LIGHTCC_NO_SUCH_FLAG=1 or LIGHT_TOPK_DENSITY", known) == ["LIGHTCC_NO_SUCH_FLAG"]
    bad = [f"{page.relative_to(ROOT)}: {n}" for page in NAMED_IN for n in unknown_flags(page.read_text(), known)]
    assert bad == []


def test_named_files_exist():
    """A source file a page names on its own (`setup.py`, `lightcc_horovod_alias.pth`) is tracked somewhere."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
                             check=True).stdout.split()
    names = {Path(t).name for t in tracked} | set(ABSENT_FILES)
    assert doc_names.FILE_NAME.findall("`gone_module.py` and `setup.py`") == ["gone_module.py", "setup.py"]
    bad = [f"{page.relative_to(ROOT)}: {n}" for page in NAMED_IN for n in doc_names.FILE_NAME.findall(page.read_text())
           if n not in names]
    assert bad == []


def test_named_modules_and_targets_exist():
    """A bare `lightcc_...` name (a top-level module, a CMake target) is a file stem or a target of this tree."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
                             check=True).stdout.split()
    cmake = "\n".join(p.read_text() for p in [ROOT / "CMakeLists.txt", *sorted((ROOT / "cmake").glob("*.cmake"))])
    stems = {Path(t).name.split(".")[0] for t in tracked}
    bad = [f"{page.relative_to(ROOT)}: {n}" for page in NAMED_IN for n in doc_names.OWN_NAME.findall(page.read_text())
           if n not in stems and not re.search(rf"\b{n}\b", cmake)]
    assert bad == []


def test_python_references_resolve():
    """`lightcc.x.y` (a module, or a name it defines; `module:function` too) names something in this tree."""
    assert doc_names.python_ref_resolves("lightcc.c10d_autoload.autoload")
    assert not doc_names.python_ref_resolves("lightcc.torch.ddp_hooks.TopkState.no_such_method")
    assert doc_names.python_refs("`lightcc.x:f`, kubectl label node N lightcc.io/harp=true") == ["lightcc.x.f"]
    bad = [f"{page.relative_to(ROOT)}: {ref}" for page in NAMED_IN for ref in doc_names.python_refs(page.read_text())
           if not doc_names.python_ref_resolves(ref)]
    assert bad == []


def test_store_keys_are_the_ones_the_code_writes():
    """A key in torch's store a page names (`lightcc/inits`, `lightcc/<n>/`) is one the backend's code writes."""
    keys = _store_keys()
    assert doc_names.names_written_key("lightcc/<n>/secret", keys)
    assert not doc_names.names_written_key("lightcc/<n>/no_such_key", keys)
    bad = [f"{page.relative_to(ROOT)}: {key}" for page in NAMED_IN
           for key in doc_names.STORE_KEY.findall(page.read_text())
           if not (ROOT / key).exists() and not list(ROOT.glob(key.rstrip("/") + "*"))
           and not doc_names.names_written_key(key, keys)]
    assert bad == []


def _archived_files() -> list[str] | None:
    """Every path of every archive of published raw data (benchmarks/archive.py), or None where this clone lacks one."""
    from benchmarks import archive

    found: list[str] = []
    for commit in archive.ARCHIVES:
        listed = archive.files(commit)
        if listed is None:
            return None
        found += listed
    return found


def test_results_citations_exist_in_the_archives():
    """Every `results:PATH` the docs and the benchmark READMEs cite is a file, folder or glob of an archive."""
    files = _archived_files()
    if files is None:
        pytest.skip("this clone lacks an archive commit (a shallow clone): git fetch --unshallow; docs/results.md")
    readmes = sorted(ROOT.glob("benchmarks/**/README.md")) + sorted(ROOT.glob("tests/data/**/README.md"))
    gone = []
    for page in PAGES + readmes:
        for cited in re.findall(r"results:(benchmarks/[\w./{},*-]*[\w*}/])", page.read_text()):
            for path in _expand(cited):
                prefix = path.rstrip("/") + "/"
                if not any(f == path or f.startswith(prefix) or fnmatch.fnmatch(f, path + "*") for f in files):
                    gone.append(f"{page.relative_to(ROOT)}: {path}")
    assert gone == []


def test_archive_checkout_writes_the_published_files(tmp_path):
    """`python -m benchmarks.archive checkout DIR` writes the archived files under the paths the docs cite."""
    if _archived_files() is None:
        pytest.skip("this clone lacks an archive commit (a shallow clone)")
    proc = subprocess.run([sys.executable, "-m", "benchmarks.archive", "checkout", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=TIMEOUT, check=True)
    assert (tmp_path / "benchmarks/scale/results/s15-heartbeat/README.md").is_file(), proc.stdout
    assert not any(p.is_file() and "/results/" not in str(p) and "_results/" not in str(p)
                   for p in tmp_path.rglob("*")), "only results folders are written"


def test_no_results_in_the_source_tree():
    """Raw results live in main's history at archive commits (benchmarks/archive.py): no results folder under
    benchmarks/ is tracked here."""
    tracked = subprocess.run(["git", "ls-files", "benchmarks"], cwd=ROOT, capture_output=True, text=True,
                             timeout=TIMEOUT, check=True).stdout.splitlines()
    assert [f for f in tracked if re.search(r"(^|/)results/|_results/", f)] == []


def test_run_table_commands_are_documented():
    shown = {c for _, c in documented_commands()}
    assert set(RUN) <= shown, set(RUN) - shown


def _parses(command: str) -> str:
    """'' if our tool's own parser accepts the documented command, else why not."""
    words = shlex.split(command)
    tool, args = words[0], words[1:]
    aliases = {**{v: k for k, v in MODULES.items()}, "lightcc.runner": "lightccrun"}
    if tool in ("python", sys.executable) and args[:1] == ["-m"] and args[1] in aliases:
        tool, args = aliases[args[1]], args[2:]
    try:
        if tool == "lightccrun":
            env_flags.env_from_args(launch.build_parser().parse_args(args))
        elif tool == "horovodrun":
            horovodrun.translate(horovodrun.build_parser().parse_args(args))
        elif tool == "lightcc-bench" and args[:1] == ["autotune-plot"]:
            from lightcc.bench.autotune_plot import build_parser as plot_parser

            plot_parser().parse_args(args[1:])
        elif tool in ("python", sys.executable) and args[:1] == ["-m"] and args[1] in SUITES:
            importlib.import_module(SUITES[args[1]]).build_parser().parse_args(args[2:])
        elif tool == "lightcc-bench" and args[:1] == ["simulate"]:
            from lightcc.bench.simulate.cli import COMMANDS
            from lightcc.bench.simulate.cli import build_parser as simulate_parser

            if args[1:2] and args[1] in COMMANDS:  # validate, seeds, emulated: parsers of their own
                importlib.import_module(COMMANDS[args[1]]).build_parser().parse_args(args[2:])
            else:
                simulate_parser().parse_args(args[1:])
        elif tool == "lightcc-bench":
            from lightcc.bench.cli import build_parser

            build_parser().parse_args(args)
        elif tool in ("harp-bench", "harp-setup"):
            native = subprocess.run([sys.executable, "-m", MODULES[tool], "--help"], env=env(), check=False, capture_output=True,
                                    text=True, timeout=TIMEOUT)
            unknown = [a for a in args if a.startswith("-") and a not in native.stdout]
            return f"unknown options {unknown}" if unknown else ""
    except SystemExit as err:
        return f"parser exited with {err.code}"
    except (ValueError, horovodrun.Refused) as err:
        return str(err)
    return ""


def test_every_documented_command_of_ours_parses():
    bad = [(page, c, why) for page, c in documented_commands()
           if c.split()[0] in OURS or "-m lightcc" in c or any(f"-m {s}" in c for s in SUITES)
           for why in [_parses(c)] if why]
    assert bad == []


def test_documented_pip_extras_exist():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for _, command in documented_commands():
        for extras in re.findall(r'"\.\[([^\]]+)\]"', command):
            for extra in extras.split(","):
                assert extra in declared, (command, extra)


@pytest.mark.parametrize("command", sorted(RUN), ids=lambda c: " ".join(c.split()[:3]))
def test_documented_command_runs(command, tmp_path):
    quick = RUN[command] or command
    out = subprocess.run(as_argv(quick, tmp_path), cwd=ROOT, env=env(), check=False, capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert out.returncode == 0, f"{quick}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"


@pytest.mark.parametrize("script", sorted(MODULES))
def test_console_script_help(script):
    out = subprocess.run([sys.executable, "-m", MODULES[script], "--help"], env=env(), check=False, capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert out.returncode == 0 and "usage" in out.stdout.lower(), out.stdout + out.stderr


def test_plot_without_matplotlib_names_the_extra(tmp_path):
    blocker = tmp_path / "block" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('matplotlib hidden by the test')\n")
    out = subprocess.run([sys.executable, "-m", "lightcc.bench", "latency", "--np", "2", "--plot", str(tmp_path / "p.png")],
                         env=env(PYTHONPATH=f"{blocker.parent}{os.pathsep}{ROOT}"), check=False, capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert out.returncode != 0 and "lightcc[bench]" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_harp_bench_runs_without_a_secret():
    base = {k: v for k, v in env().items() if k not in ("HARP_JOB_SECRET", "HARP_ALLOW_NO_SECRET")}
    out = subprocess.run([sys.executable, "-m", "lightcc.harp.bench", "--modes", "harp", "--sizes", "64K",
                          "--mb-per-size", "2"], env=base, check=False, capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0 and "bench mode=harp" in out.stdout, out.stdout + out.stderr


def test_check_build_reports_the_gpu_truthfully():
    from lightcc.common import build_info
    from lightcc.common.native import core

    devices, why = build_info.cuda_devices()
    out = subprocess.run([sys.executable, "-m", "lightcc.runner.launch", "--check-build"], env=env(),
                         check=False, capture_output=True, text=True, timeout=TIMEOUT).stdout
    kernels = next(ln for ln in out.splitlines() if "CUDA kernels" in ln)
    # Ticked only when the library the engine loads for GPU tensors really loads.
    loads = build_info.cuda_built() and not core().device_info("")["cuda_error"]
    assert kernels.strip().startswith("[X]" if loads else "[ ]"), kernels
    nccl = next(ln for ln in out.splitlines() if "NCCL" in ln and "plugin" not in ln)
    assert nccl.strip().startswith("[X]" if build_info.nccl_version() else "[ ]"), nccl
    line = next(ln for ln in out.splitlines() if "CUDA GPU" in ln)
    assert line.strip().startswith("[X]" if devices else "[ ]"), line
    if not devices:
        assert why and why in line
    if shutil.which("nvidia-smi") is None and not Path("/dev/nvidiactl").exists():
        assert line.strip().startswith("[ ]"), "no GPU on this machine, yet --check-build ticks one"
