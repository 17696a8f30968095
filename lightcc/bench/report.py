"""The JSON report: builds it from rows and machine info, checks its schema, writes it."""

from __future__ import annotations

import datetime
import json
import math

SCHEMA = "lightcc-bench/1"
ROW_FIELDS = {
    "library": str,
    "op": str,
    "size": int,
    "count": int,
    "dtype": str,
    "time_us": float,
    "algbw": float,
    "busbw": float,
    "iters": int,
}
OPTIONAL_ROW_FIELDS = {
    "tensors": int,
    "first_step_us": float,
    # negotiation rows of lightcc: its engine's counters per steady step
    "engine_negotiate_us": float,
    "engine_wait_us": float,
    "engine_execute_us": float,
    "engine_cycles": float,
    "engine_cached_fraction": float,
}


class SchemaError(ValueError):
    """A report does not follow the lightcc-bench/1 schema."""


def build_report(
    command: str, nranks: int, launcher: str, libraries: list[str], machine: dict, rows: list[dict], skipped: list[dict]
) -> dict:
    """The report document: run description, machine info, one row per (library, size), skips."""
    return {
        "schema": SCHEMA,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": command,
        "np": nranks,
        "launcher": launcher,
        "libraries": list(libraries),
        "machine": machine,
        "rows": rows,
        "skipped": skipped,
    }


def _check_type(where: str, value: object, kind: type) -> None:
    ok = isinstance(value, kind) and not isinstance(value, bool)
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok:
        raise SchemaError(f"{where}: expected {kind.__name__}, got {value!r}")


def validate_report(doc: dict) -> None:
    """Raise :class:`SchemaError` unless ``doc`` is a well-formed lightcc-bench/1 report.

    Rows need every field of ROW_FIELDS with the right type, positive size, count, time and
    algbw, a busbw that is positive (or 0 on a single rank, where nothing crosses a bus), a
    library listed in ``libraries``, and ``ratio`` either null or a positive number.
    """
    if doc.get("schema") != SCHEMA:
        raise SchemaError(f"schema is {doc.get('schema')!r}, expected {SCHEMA!r}")
    for key, kind in (
        ("command", str),
        ("np", int),
        ("launcher", str),
        ("libraries", list),
        ("machine", dict),
        ("rows", list),
        ("skipped", list),
    ):
        if key not in doc:
            raise SchemaError(f"missing top-level key {key!r}")
        _check_type(key, doc[key], kind)
    for i, row in enumerate(doc["rows"]):
        for key, kind in ROW_FIELDS.items():
            if key not in row:
                raise SchemaError(f"rows[{i}]: missing {key!r}")
            _check_type(f"rows[{i}].{key}", row[key], kind)
        for key, kind in OPTIONAL_ROW_FIELDS.items():
            if key in row:
                _check_type(f"rows[{i}].{key}", row[key], kind)
        for key in ("time_us", "algbw", "size", "count"):
            if row[key] <= 0:
                raise SchemaError(f"rows[{i}].{key} must be positive, got {row[key]!r}")
        if row["busbw"] < 0 or (row["busbw"] == 0 and doc["np"] > 1):
            raise SchemaError(f"rows[{i}].busbw must be positive with {doc['np']} ranks, got {row['busbw']!r}")
        if row["library"] not in doc["libraries"]:
            raise SchemaError(f"rows[{i}].library {row['library']!r} not in libraries")
        ratio = row.get("ratio", "missing")
        if ratio == "missing":
            raise SchemaError(f"rows[{i}]: missing 'ratio'")
        if ratio is not None:
            _check_type(f"rows[{i}].ratio", ratio, float)
            if ratio <= 0:
                raise SchemaError(f"rows[{i}].ratio must be positive, got {ratio!r}")


def write_report(doc: dict, path: str) -> None:
    """Validate ``doc`` and write it as indented JSON to ``path``."""
    validate_report(doc)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
