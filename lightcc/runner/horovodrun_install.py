"""Writes the ``horovodrun`` command (``lightccrun --install-horovodrun``): a script that runs lightcc's horovodrun.

Apart from horovodrun.py so that lightccrun (launch.py), which horovodrun runs, need not import it.
"""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPT = """#!{python}
# horovodrun for lightcc (written by `lightccrun --install-horovodrun`): Horovod's flags, run by lightccrun.
import sys
from lightcc.runner.horovodrun import main
sys.exit(main())
"""


def install(directory: str | None = None, force: bool = False) -> str:
    """Writes a ``horovodrun`` script into ``directory`` (default: beside this Python).

    Refuses to replace a ``horovodrun`` that is not lightcc's (Horovod's own) unless ``force``.

    Returns:
        The path written.

    Raises:
        ValueError: the target exists and is not lightcc's, or cannot be written.
    """
    target = Path(directory or Path(sys.executable).parent) / "horovodrun"
    if target.exists() and not force:
        text = target.read_text(errors="replace")
        if "lightcc.runner.horovodrun" not in text:
            raise ValueError(
                f"{target} exists and is not lightcc's (Horovod is installed?); remove it or pass --force to replace it"
            )
    try:
        target.write_text(SCRIPT.format(python=sys.executable))
        target.chmod(0o755)
    except OSError as err:
        raise ValueError(f"cannot write {target}: {err.strerror}") from None
    return str(target)
