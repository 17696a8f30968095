"""MkDocs hook: publishes the measured plots (benchmarks/*/results/*.png) with the site.

The plots live beside the benchmarks that made them, outside docs/; this adds them to the
site's files under the same paths, so results.md can show them and `--strict` checks the links.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent


def plots() -> list[str]:
    """Repository-relative paths of every published plot."""
    return sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("benchmarks/*/results/*.png"))


def on_files(files, config):
    for rel in plots():
        files.append(
            File(rel, src_dir=str(ROOT), dest_dir=config["site_dir"], use_directory_urls=config["use_directory_urls"])
        )
    return files
