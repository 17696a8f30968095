"""Validates Kubernetes manifests against upstream schemas: vendored CRDs and kubernetes-validate's core types.

    python deploy/kubernetes/validate.py [FILE.yaml ...]     (default: every *.yaml here)

Custom resources (TrainJob and ClusterTrainingRuntime of Kubeflow Trainer, MPIJob v2beta1 of
mpi-operator, MPIJob v1 of the training operator) are checked against the ``openAPIV3Schema`` of
their CRD, vendored from a tagged release in ``schemas/`` (see its README), made strict: an object
that lists its properties rejects others unless it says ``x-kubernetes-preserve-unknown-fields``.
Core types (DaemonSet, ...) go through ``kubernetes-validate`` in strict mode for every version in
``K8S_VERSIONS``. A document of any other kind is an error, so nothing passes unchecked. Prints one
line per problem (file, document, path, message) and exits 1 if any. Needs PyYAML, jsonschema and
kubernetes-validate (the ``test`` extra has them).
"""

from __future__ import annotations

import copy
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import yaml
from jsonschema import Draft4Validator

HERE = Path(__file__).resolve().parent
SCHEMAS = HERE / "schemas"
CRDS = [
    SCHEMAS / "trainer-v2.3.0" / "trainer.kubeflow.org_trainjobs.yaml",
    SCHEMAS / "trainer-v2.3.0" / "trainer.kubeflow.org_clustertrainingruntimes.yaml",
    SCHEMAS / "mpi-operator-v0.8.0" / "kubeflow.org_mpijobs.yaml",
    SCHEMAS / "training-operator-v1.9.4" / "kubeflow.org_mpijobs.yaml",
]
# The Kubernetes releases whose published core schemas every manifest must satisfy.
K8S_VERSIONS = ("1.34.0", "1.35.0", "1.36.0", "1.37.0")
PRESERVE = "x-kubernetes-preserve-unknown-fields"


def _strict(schema: Any) -> Any:
    """A copy in which every object listing ``properties`` accepts no other keys."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strict(v) for k, v in schema.items() if k != "properties"}
    if "properties" in schema:
        out["properties"] = {k: _strict(v) for k, v in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get(PRESERVE):
            out["additionalProperties"] = False
    return out


@lru_cache(maxsize=None)
def crd_validators() -> dict:
    """``(apiVersion, kind) -> Draft4Validator`` for every served version of every vendored CRD."""
    found = {}
    for path in CRDS:
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if not version.get("served", True):
                continue
            schema = _strict(copy.deepcopy(version["schema"]["openAPIV3Schema"]))
            found[(f"{group}/{version['name']}", kind)] = Draft4Validator(schema)
    return found


def _is_core(api_version: str) -> bool:
    """Kubernetes' own groups: ``v1``, ``apps/v1``, ``*.k8s.io/...``."""
    group = api_version.rpartition("/")[0]
    return "." not in group or group.endswith(".k8s.io")


def _core_problems(doc: dict) -> Iterator[str]:
    import kubernetes_validate

    for version in K8S_VERSIONS:
        try:
            kubernetes_validate.validate(copy.deepcopy(doc), version, strict=True)
        except kubernetes_validate.ValidationError as err:
            field = ".".join(str(p) for p in err.path) or "(top)"
            yield f"Kubernetes {version}: {field}: {err.message}"
        except kubernetes_validate.SchemaNotFoundError as err:
            yield f"Kubernetes {version}: no schema: {err}"


def document_problems(doc: dict) -> Iterator[str]:
    """Messages for one parsed manifest document."""
    api_version, kind = doc.get("apiVersion", ""), doc.get("kind", "")
    validator = crd_validators().get((api_version, kind))
    if validator is not None:
        for error in sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path]):
            field = ".".join(str(p) for p in error.absolute_path) or "(top)"
            yield f"{kind} {field}: {error.message}"
    elif api_version and _is_core(api_version):
        yield from (f"{kind} {msg}" for msg in _core_problems(doc))
    else:
        yield f"no vendored schema for apiVersion={api_version!r} kind={kind!r}"


def problems(path: Path) -> Iterator[str]:
    """One message per schema violation in every document of ``path``."""
    try:
        docs = list(yaml.safe_load_all(path.read_text()))
    except yaml.YAMLError as err:
        yield f"{path}: not YAML: {err}"
        return
    for index, doc in enumerate(d for d in docs if d is not None):
        where = f"{path} (document {index + 1})"
        if not isinstance(doc, dict):
            yield f"{where}: not a mapping"
            continue
        yield from (f"{where}: {msg}" for msg in document_problems(doc))


def manifests() -> list[Path]:
    """Every manifest under deploy/kubernetes (examples included)."""
    return sorted(p for p in HERE.rglob("*.yaml") if "schemas" not in p.parts)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or manifests()
    found = [msg for path in paths for msg in problems(path)]
    for msg in found:
        print(msg)
    print(f"{len(paths)} file(s) checked, {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
