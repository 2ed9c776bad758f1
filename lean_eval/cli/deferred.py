"""The lower layers the commands call, imported when a command first uses them.

`lean-eval --help` must start fast (benchmarks/cli_startup.py): pydantic, rich and the scoring
pipeline are imported when a command first uses them, never at import time. Type checkers (and
import-linter) see the real imports below; at run time each name is a stand-in that imports its
module on first attribute access. Only modules below the command line are deferred here, so a
stand-in can never hide an import cycle: nothing in ``lean_eval.cli`` is named.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lean_eval import (
        api,
        catalog,
        documents,
        driver,
        intake,
        prepare,
        probe,
        problem,
        progress,
        report,
        run,
        selfcheck,
        session,
        starter,
        validation,
        verdict,
    )
    from lean_eval.toolchain import check_release, release_incompatibility
else:

    class _Deferred:
        """A module imported (normally, into sys.modules) on first attribute access."""

        def __init__(self, name: str) -> None:
            self._name = name

        def __getattr__(self, attr: str) -> Any:
            return getattr(importlib.import_module(self._name), attr)

    def _deferred(module: str, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(importlib.import_module(module), name)(*args, **kwargs)

        call.__name__ = name
        return call

    api = _Deferred("lean_eval.api")
    catalog = _Deferred("lean_eval.catalog")
    documents = _Deferred("lean_eval.documents")
    driver = _Deferred("lean_eval.driver")
    intake = _Deferred("lean_eval.intake")
    prepare = _Deferred("lean_eval.prepare")
    probe = _Deferred("lean_eval.probe")
    problem = _Deferred("lean_eval.problem")
    progress = _Deferred("lean_eval.progress")
    report = _Deferred("lean_eval.report")
    run = _Deferred("lean_eval.run")
    selfcheck = _Deferred("lean_eval.selfcheck")
    session = _Deferred("lean_eval.session")
    starter = _Deferred("lean_eval.starter")
    validation = _Deferred("lean_eval.validation")
    verdict = _Deferred("lean_eval.verdict")
    check_release = _deferred("lean_eval.toolchain", "check_release")
    release_incompatibility = _deferred("lean_eval.toolchain", "release_incompatibility")

__all__ = ["api", "catalog", "check_release", "documents", "driver", "intake", "prepare", "probe",
           "problem", "progress", "release_incompatibility", "report", "run", "selfcheck",
           "session", "starter", "validation", "verdict"]
