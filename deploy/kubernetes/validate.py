"""Validates Kubernetes manifests against the vendored schemas in deploy/kubernetes/schemas/.

    python deploy/kubernetes/validate.py [FILE.yaml ...]     (default: every *.yaml here)

Each YAML document is matched to a schema by apiVersion and kind (MPIJob kubeflow.org/v2beta1
and v1, apps/v1 DaemonSet); a document of any other kind is an error, so nothing passes
unchecked. Prints one line per problem (file, document, path, message) and exits 1 if any.
Needs PyYAML and jsonschema (the `test` extra has both).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Iterator

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

HERE = Path(__file__).resolve().parent
SCHEMAS = HERE / "schemas"
KINDS = {
    ("kubeflow.org/v2beta1", "MPIJob"): ("mpijob-v2beta1.json", ""),
    ("kubeflow.org/v1", "MPIJob"): ("mpijob-v1.json", ""),
    ("apps/v1", "DaemonSet"): ("k8s-core-v1.json", "#/$defs/DaemonSet"),
}


def registry() -> Registry:
    """Every schema file, under its $id, so that cross-file $refs resolve offline."""
    resources = []
    for path in sorted(SCHEMAS.glob("*.json")):
        doc = json.loads(path.read_text())
        resources.append((doc["$id"], Resource.from_contents(doc)))
    return Registry().with_resources(resources)


def validator_for(api_version: str, kind: str, reg: Registry) -> Draft202012Validator | None:
    entry = KINDS.get((api_version, kind))
    if entry is None:
        return None
    file_id, pointer = entry
    return Draft202012Validator({"$ref": file_id + pointer}, registry=reg)


def problems(path: Path, reg: Registry | None = None) -> Iterator[str]:
    """One message per schema violation in every document of ``path``."""
    reg = reg or registry()
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
        api_version, kind = doc.get("apiVersion", ""), doc.get("kind", "")
        validator = validator_for(api_version, kind, reg)
        if validator is None:
            yield f"{where}: no vendored schema for apiVersion={api_version!r} kind={kind!r}"
            continue
        for error in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            field = ".".join(str(p) for p in error.absolute_path) or "(top)"
            yield f"{where}: {kind} {field}: {error.message}"


def manifests() -> list[Path]:
    """Every manifest under deploy/kubernetes (examples included)."""
    return sorted(p for p in HERE.rglob("*.yaml") if "schemas" not in p.parts)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or manifests()
    reg = registry()
    found = [msg for path in paths for msg in problems(path, reg)]
    for msg in found:
        print(msg)
    print(f"{len(paths)} file(s) checked, {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
