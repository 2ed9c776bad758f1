"""The results store's result ids, file names and lock (records: ``records.results_store``).
The declared model is used verbatim; the user is lowercased only in the id and the file name.
One export at a time reads and writes a store (``StoreLock``), so none loses another's results.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import rfc8785

from lean_eval.errors import ExportRefusedError, OutputError

RESULT_ID_DOMAIN = b"lean-eval-result-v2\0"


def result_id(user: str, declared_model: str, problem_id: str, statement_revision: int) -> str:
    # rfc8785: the canonical form is the library's, never a hand-tuned json.dumps.
    canonical = rfc8785.dumps([user.lower(), declared_model, problem_id, statement_revision])
    return "r2_" + hashlib.sha256(RESULT_ID_DOMAIN + canonical).hexdigest()


def file_name(user: str) -> str:
    return f"{user.lower()}.json"


LOCK_WAIT = 300.0  # seconds an export waits for another before it gives up
_POLL = 0.05


class StoreLock:
    """The exclusive right to read-modify-write one results store, waited for at most ``wait``
    seconds; release with ``close``. The flock is on the store directory itself: no lock file
    enters a store that is published (a git repository), and the kernel frees a dead
    holder's lock. ``on_wait`` is told once when the store is busy."""

    def __init__(self, results_dir: Path, wait: float = LOCK_WAIT,
                 on_wait: Callable[[str], None] | None = None) -> None:
        try:
            results_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(results_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise OutputError(f"cannot lock the results store {results_dir}: "
                              f"{exc.strerror or exc}") from exc
        deadline = time.monotonic() + wait
        self.waited = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise ExportRefusedError(
                        f"the results store {results_dir} is still being written by another "
                        f"export after {wait:.0f} s; nothing was written") from None
                if not self.waited and on_wait is not None:
                    on_wait(f"the results store {results_dir} is being written by another "
                            "export; waiting for it to finish")
                self.waited = True
                time.sleep(_POLL)
        self._fd: int | None = fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
