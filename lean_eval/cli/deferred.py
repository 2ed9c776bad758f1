"""The lower layers the commands call, imported on first use so that ``lean-eval --help``
starts fast (benchmarks/cli_startup.py). Type checkers and import-linter see the real imports;
nothing in ``lean_eval.cli`` is deferred, so a stand-in can never hide an import cycle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lean_eval import api
    from lean_eval.benchmark import catalog, checkout, problem, starter, validation
    from lean_eval.benchmark.toolchain import check_release, release_incompatibility
    from lean_eval.intake import reader
    from lean_eval.machine import prepare
    from lean_eval.outputs.report import run_report
    from lean_eval.probes import preflight as preflight_steps
    from lean_eval.probes import registry, selfcheck
    from lean_eval.records import documents, verdict
    from lean_eval.scoring import driver, options
    from lean_eval.scoring import setup as setup_steps
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
    catalog = _Deferred("lean_eval.benchmark.catalog")
    documents = _Deferred("lean_eval.records.documents")
    driver = _Deferred("lean_eval.scoring.driver")
    reader = _Deferred("lean_eval.intake.reader")
    prepare = _Deferred("lean_eval.machine.prepare")
    registry = _Deferred("lean_eval.probes.registry")
    problem = _Deferred("lean_eval.benchmark.problem")
    run_report = _Deferred("lean_eval.outputs.report.run_report")
    options = _Deferred("lean_eval.scoring.options")
    selfcheck = _Deferred("lean_eval.probes.selfcheck")
    checkout = _Deferred("lean_eval.benchmark.checkout")
    preflight_steps = _Deferred("lean_eval.probes.preflight")
    setup_steps = _Deferred("lean_eval.scoring.setup")
    starter = _Deferred("lean_eval.benchmark.starter")
    validation = _Deferred("lean_eval.benchmark.validation")
    verdict = _Deferred("lean_eval.records.verdict")
    check_release = _deferred("lean_eval.benchmark.toolchain", "check_release")
    release_incompatibility = _deferred("lean_eval.benchmark.toolchain", "release_incompatibility")

__all__ = ["api", "catalog", "check_release", "checkout", "documents", "driver", "options",
           "preflight_steps", "prepare", "problem", "reader", "registry", "release_incompatibility",
           "run_report", "selfcheck", "setup_steps", "starter", "validation", "verdict"]
