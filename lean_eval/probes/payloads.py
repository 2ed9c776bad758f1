"""Probe payloads: a shell command as a real Lean ``#eval`` and as a ``-- standin-io:`` line, so
a probe means the same on a real toolchain and on the stand-in (design §7)."""

from __future__ import annotations

import base64
import json
import secrets
import shlex
from collections.abc import Mapping

PY = "/usr/bin/python3"  # payload interpreter; visible in Lake's sandbox through --ro-bind / /


def lean_string(text: str) -> str:
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
               .replace("\t", "\\t"))
    return f'"{escaped}"'


def io_payload(command: str) -> str:
    """Run ``command`` (one line) with ``/bin/sh -c`` while the file is elaborated."""
    if "\n" in command:
        raise ValueError("a payload command is one line")
    return (f"-- standin-io: {command}\n"
            "#eval show IO Unit from do\n"
            f'  let out ← IO.Process.output {{ cmd := "/bin/sh", args := #["-c", '
            f"{lean_string(command)}] }}\n"
            "  IO.println out.stdout\n")


def python_command(code: str, spec: Mapping[str, object]) -> str:
    """A shell command running ``code`` under :data:`PY` with ``sys.argv[2]`` = JSON ``spec``."""
    blob = base64.b64encode(code.encode()).decode("ascii")
    return (f"{PY} -c 'import base64,sys;exec(base64.b64decode(sys.argv[1]))' {blob} "
            + shlex.quote(json.dumps(dict(spec), sort_keys=True)))


def submission(declarations: str, *payloads: str) -> str:
    """A ``Submission.lean``: ``declarations`` inside ``namespace Submission``, then payloads."""
    return "\n".join(["-- lean-eval probe: synthetic submission", "namespace Submission", "",
                      declarations.strip(), "", "end Submission", "", *payloads]) + "\n"


def token() -> str:
    return "lean-eval-probe-" + secrets.token_hex(8)
