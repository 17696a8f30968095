"""Progress bar for a run: rank 0's worker appends steps to a file, the front end draws them.

The bar is drawn by the front end rather than by the worker because launchers forward a
worker's stderr line by line (lightccrun prefixes each line), which would hold a
carriage-return bar back until the run ends.
"""

from __future__ import annotations

import sys
from typing import TextIO


class Progress:
    """A bar on stderr counting finished steps out of ``total``: tqdm if installed, else plain text."""

    def __init__(self, total: int, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.total, self.done, self.enabled = total, 0, enabled
        self._stream = stream if stream is not None else sys.stderr
        self._tqdm = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._tqdm = tqdm(total=total, file=self._stream, unit="step", leave=False, dynamic_ncols=True)

    def advance(self, label: str, steps: int = 1) -> None:
        """Mark ``steps`` more steps done; ``label`` names what just finished."""
        self.done += steps
        if not self.enabled:
            return
        if self._tqdm is not None:
            self._tqdm.set_postfix_str(label, refresh=False)
            self._tqdm.update(steps)
            return
        width = 30
        filled = width * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (width - filled)
        self._stream.write(f"\r[{bar}] {self.done}/{self.total} {label:<24}")
        self._stream.flush()

    def close(self) -> None:
        """Finish the bar (clears tqdm's line, ends the plain bar's line)."""
        if not self.enabled:
            return
        if self._tqdm is not None:
            self._tqdm.close()
        else:
            self._stream.write("\n")
            self._stream.flush()


class ProgressWriter:
    """Worker side: appends ``steps<TAB>label`` per finished step to ``path`` (nothing if no path)."""

    def __init__(self, path: str | None) -> None:
        self._file = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115 (closed in close())

    def advance(self, label: str, steps: int = 1) -> None:
        """Record ``steps`` finished steps, the last of them ``label``."""
        if self._file is not None:
            self._file.write(f"{steps}\t{label}\n")
            self._file.flush()

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None


class ProgressFollower:
    """Front end side: shows on ``bar`` the whole lines a ProgressWriter appended since the last poll."""

    def __init__(self, path: str, bar: Progress) -> None:
        self._path, self._bar, self._offset = path, bar, 0

    def poll(self) -> None:
        """Read new complete lines (a partly written last line waits for the next poll)."""
        try:
            with open(self._path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        self._offset += end
        for line in data[:end].decode("utf-8", errors="replace").splitlines():
            steps, _, label = line.partition("\t")
            self._bar.advance(label, int(steps))
