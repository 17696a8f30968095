"""Builds the command that starts one rank on another host through the launch template.

The template (default ``ssh -o BatchMode=yes -p {port} {host}``) is split like a shell would and
followed by a POSIX ``sh`` script that changes to the launcher's directory, reads the job secret
from its first line of stdin (so the secret never appears in a command line or ``ps``), and
``exec``\\ s ``env K=V ... command``. ``ssh``/``rsh`` hand their arguments to the remote login
shell, so they get the script as one quoted word; other wrappers (``ip netns exec {host}``,
``env X={host}``, ``docker exec {host}``) execute their arguments directly and get
``sh -c script``.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from typing import Mapping, Sequence

DEFAULT_TEMPLATE = "ssh -o BatchMode=yes -p {port} {host}"
SECRET_VAR = "LIGHTCC_JOB_SECRET"

_SHELL_TRANSPORTS = {"ssh", "rsh"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Variables that describe this host or session rather than the job (BASH_FUNC_* and
# *CUDA_VISIBLE_DEVICES are also skipped by horovodrun); the secret travels on stdin instead.
_NOT_FORWARDED = re.compile(
    r"^(BASH_FUNC_.*|OLDPWD|PWD|SHLVL|_|HOSTNAME|HOME|USER|LOGNAME|MAIL|SSH_.*|TERM|TERMCAP|"
    r"DISPLAY|XAUTHORITY|LS_COLORS|PS[0-4]|TMPDIR|XDG_.*|.*CUDA_VISIBLE_DEVICES|" + SECRET_VAR + r")$"
)


@dataclass(frozen=True)
class RemoteCommand:
    """The local argv that starts a remote rank, and the bytes to write to its stdin."""

    argv: list[str]
    stdin: bytes


def forwardable_env(env: Mapping[str, str]) -> dict[str, str]:
    """The part of ``env`` worth sending to another host, in a stable order."""
    return {k: env[k] for k in sorted(env) if _ENV_NAME.match(k) and not _NOT_FORWARDED.match(k)}


def template_words(template: str, host: str, ssh_port: int) -> list[str]:
    """Fills ``{host}`` and ``{port}`` in the template and splits it into argv words."""
    try:
        filled = template.format(host=host, port=ssh_port)
    except (KeyError, IndexError, ValueError) as err:
        raise ValueError(
            f"--launch-template {template!r}: only {{host}} and {{port}} may be substituted ({err!r})"
        ) from None
    words = shlex.split(filled)
    if not words:
        raise ValueError("--launch-template is empty")
    return words


def remote_command(
    template: str, host: str, ssh_port: int, env: Mapping[str, str], secret: str, command: Sequence[str], cwd: str
) -> RemoteCommand:
    """The argv (and stdin) that runs ``command`` on ``host`` with ``env`` and the secret."""
    if "\n" in secret:
        raise ValueError(f"{SECRET_VAR} must be a single line")
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in forwardable_env(env).items())
    script = (
        f"cd {shlex.quote(cwd)} 2>/dev/null; "
        f"IFS= read -r {SECRET_VAR}; export {SECRET_VAR}; "
        f"exec env {assignments} {shlex.join(command)}"
    )
    words = template_words(template, host, ssh_port)
    if os.path.basename(words[0]) in _SHELL_TRANSPORTS:
        argv = words + ["sh -c " + shlex.quote(script)]
    else:
        argv = words + ["sh", "-c", script]
    return RemoteCommand(argv=argv, stdin=(secret + "\n").encode())
