"""The stand-in Lean toolchain (tests only); see tests/standin/README.md."""

import os


def restore_environment() -> None:
    """Undo Python's C-locale coercion (PEP 538). Started with no locale variables, Python
    adds `LC_CTYPE=C.UTF-8` to its environment, which every child would inherit; the stand-in
    must pass on exactly the environment it was given. /proc/self/environ still holds the
    environment of the exec."""
    try:
        with open("/proc/self/environ", "rb") as f:
            names = {item.split(b"=", 1)[0] for item in f.read().split(b"\0") if item}
    except OSError:
        return
    if b"LC_CTYPE" not in names:
        os.environ.pop("LC_CTYPE", None)
