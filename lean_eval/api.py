"""The documented Python API of lean-eval (design §3): score a batch, check a submission, load a
catalog, read an output directory. docs/api.md documents it and its semver promise,
which covers every name in ``__all__``; every other module of ``lean_eval`` is internal.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from pydantic import ValidationError

from lean_eval.benchmark.catalog import Catalog
from lean_eval.benchmark.checkout import default_benchmark, load_selected
from lean_eval.benchmark.sets import Selection
from lean_eval.errors import (
    CatalogError,
    ConfigError,
    DigestMismatchError,
    ExportRefusedError,
    LeanEvalError,
    MergeRefusedError,
    OutputError,
    OutputRefusedError,
    PrepareError,
    PrerequisitesError,
    ProbesFailedError,
    ProcessStartError,
    ReplayRefusedError,
    SandboxUnavailableError,
    SetupError,
    SigningKeyError,
    StepFailedError,
    ToolchainError,
    TrustedConfigError,
    UsageError,
)
from lean_eval.intake.bounds import DEFAULT_LIMITS, IntakeLimits
from lean_eval.outputs.report import run_report
from lean_eval.outputs.report.run_report import Run
from lean_eval.probes import preflight
from lean_eval.records.documents import ProblemCheck, SubmissionCheck
from lean_eval.records.probe_result import ProbeResult
from lean_eval.records.verdict import PairSummary, Preflight, Summary, Verdict
from lean_eval.scoring import arguments, batch, precheck
from lean_eval.scoring.driver import DEFAULT_MAX_FILE_BYTES
from lean_eval.scoring.gate import VERDICTS_ONLY, ExitPolicy
from lean_eval.scoring.options import RunOptions, Signer, not_probed
from lean_eval.scoring.request import DEFAULT_TIMEOUT, ScoreRequest, keyword_names
from lean_eval.scoring.scheduler import Progress
from lean_eval.scoring.setup import Setup, checked_setup
from lean_eval.scoring.summary import write_refusal
from lean_eval.supervise import pair_fs, resources
from lean_eval.supervise.disk import DEFAULT_DISK_BYTES as DEFAULT_DISK_LIMIT
from lean_eval.supervise.disk import DEFAULT_DISK_FILES, DEFAULT_DISK_RESERVE
from lean_eval.supervise.resources import DEFAULT_MAX_PROCESSES, DEFAULT_MEMORY_LIMIT, PairLimits

__all__ = [
    "DEFAULT_DISK_FILES", "DEFAULT_DISK_LIMIT", "DEFAULT_DISK_RESERVE", "DEFAULT_MAX_PROCESSES",
    "DEFAULT_MAX_WRITTEN_FILE_BYTES", "DEFAULT_MEMORY_LIMIT", "DEFAULT_TIMEOUT", "Catalog",
    "CatalogError", "ConfigError", "DigestMismatchError", "ExportRefusedError", "IntakeLimits",
    "LeanEvalError", "MergeRefusedError", "OutputError", "OutputRefusedError", "PairSummary",
    "PrepareError", "PrerequisitesError", "ProbeResult", "ProbesFailedError", "ProblemCheck",
    "ProcessStartError", "Progress", "ReplayRefusedError", "Run", "SandboxUnavailableError",
    "ScoreRequest", "SetupError", "SigningKeyError", "StepFailedError", "SubmissionCheck",
    "Summary", "ToolchainError", "TrustedConfigError", "UsageError", "Verdict", "load_catalog",
    "read_output", "score", "validate_submission",
]

StrPath = str | os.PathLike[str]
P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_MAX_WRITTEN_FILE_BYTES = DEFAULT_MAX_FILE_BYTES  # `run-eval --max-written-file-bytes`
# Read from ``env`` when the request leaves them unset, as click reads them (design §3).
ENVIRONMENT = {"toolchain": "LEAN_EVAL_TOOLCHAIN", "bwrap": "LEAN_EVAL_BWRAP",
               "allow_bwrap_version": "LEAN_EVAL_ALLOW_BWRAP_VERSION"}


def _keywords(function: Callable[P, R]) -> Callable[P, R]:
    """Errors the API raises name its keyword arguments, not the command line's options."""
    @functools.wraps(function)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except LeanEvalError as exc:
            if exc.args and isinstance(exc.args[0], str):
                exc.args = (keyword_names(exc.args[0]), *exc.args[1:])
            raise
    return wrapped


def _warn(on_warning: Callable[[str], None] | None, warnings: Iterable[str]) -> None:
    if on_warning is not None:
        for warning in warnings:
            on_warning(warning)


def _request(submissions: Sequence[StrPath] | ScoreRequest, out: StrPath | None,
             options: Mapping[str, Any], env: Mapping[str, str]) -> ScoreRequest:
    """One request from either form of :func:`score`'s arguments, completed from ``env``."""
    if isinstance(submissions, ScoreRequest):
        if out is not None or options:
            given = ", ".join(["out"] * (out is not None) + sorted(options))
            raise UsageError(f"score() takes a ScoreRequest or keyword arguments, not both "
                             f"(also given: {given})")
        request = submissions
    else:
        try:
            request = ScoreRequest.model_validate(
                {"submissions": tuple(submissions), "out": out, **options})
        except ValidationError as exc:
            faults = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                               for e in exc.errors())
            raise UsageError(f"score(): {faults}") from None
    unset: dict[str, object] = {field: env[name] for field, name in ENVIRONMENT.items()
                                if getattr(request, field) is None and env.get(name)}
    if "toolchain" in unset:
        unset["toolchain"] = Path(str(unset["toolchain"]))
    return request.model_copy(update=unset)


def score(submissions: Sequence[StrPath] | ScoreRequest, out: StrPath | None = None, *,
          env: Mapping[str, str] | None = None,
          on_progress: Callable[[Progress], None] | None = None,
          on_probes: Callable[[tuple[ProbeResult, ...]], None] | None = None,
          on_warning: Callable[[str], None] | None = None, **options: Any) -> Summary:
    """Score every (submission, problem) pair, as ``lean-eval run-eval`` does.

    Pass a :class:`ScoreRequest`, or ``submissions`` (directories or ``.tar``/``.tar.gz``/
    ``.tgz`` archives), ``out`` and any of its fields as keywords (each is the ``run-eval``
    option of the same name, with the same default). Writes ``<out>/<submission>/<problem>.json``
    verdicts and ``<out>/summary.json`` and returns the summary; a re-run on the same ``out``
    resumes (``rescore=True``: it does not). ``env`` (default ``os.environ``) is where tools
    are found and what pairs run from; its ``LEAN_EVAL_TOOLCHAIN``, ``LEAN_EVAL_BWRAP`` and
    ``LEAN_EVAL_ALLOW_BWRAP_VERSION`` apply when the request leaves those unset. The preflight
    probes run only when a pair needs a sandbox (``skip_probes``: never).

    Callbacks: ``on_warning`` (a dirty benchmark tree, skipped probes), ``on_probes`` (every
    probe's entry once they ran), ``on_progress`` (each time a pair starts or ends).

    Raises :class:`SetupError` or a subclass when nothing could be scored,
    :class:`ProbesFailedError` when a probe failed (the refusal is recorded in ``out``), and
    :class:`OutputError` when ``out`` became unwritable mid-run (verdicts written stay valid).
    A rejected proof is a verdict; ``Summary.exit_code`` is what ``run-eval`` would exit with.
    """
    caller_env = dict(os.environ if env is None else env)
    request = _keywords(_request)(submissions, out, options, caller_env)
    return _keywords(run_request)(request, caller_env, on_progress, on_probes, on_warning)


def run_request(request: ScoreRequest, env: Mapping[str, str],
                on_progress: Callable[[Progress], None] | None = None,
                on_probes: Callable[[tuple[ProbeResult, ...]], None] | None = None,
                on_warning: Callable[[str], None] | None = None,
                policy: ExitPolicy = VERDICTS_ONLY) -> Summary:
    """:func:`score` with errors worded for the command line, which calls it (design §2.2);
    ``policy``: ``--fail-on`` and ``--exit-zero``, which decide the exit code ``summary.json``
    records (``scoring.gate``)."""
    caller_env = dict(env)
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    setup = checked_setup(request, caller_env, _load_key)
    try:
        _warn(on_warning, setup.cat.warnings)
        options = _run_options(request, setup)
        planned = batch.plan_batch(setup.submissions, setup.cat, setup.tools, options,
                                   setup.held)
        if planned.planned.needs_sandbox:
            _warn(on_warning, filter(None, [resources.best_effort(options.pair_limits),
                                            pair_fs.best_effort(
                                                options.pair_limits.disk_limit,
                                                options.pair_limits.disk_files,
                                                options.keep_work)]))
        try:
            record = _preflight(planned, request, setup, caller_env, on_probes, on_warning)
        except ProbesFailedError as exc:
            raise ProbesFailedError(_refusal(request.out, setup, exc, started_at),
                                    exc.preflight) from None
        return batch.execute(planned, caller_env, record, on_progress=_downgrades_told(
            on_progress, on_warning, resources.best_effort(options.pair_limits) is None),
            policy=policy)
    finally:
        setup.held.close()


def _downgrades_told(on_progress: Callable[[Progress], None] | None,
                     on_warning: Callable[[str], None] | None,
                     kernel: bool) -> Callable[[Progress], None] | None:
    """``on_progress``, and a warning for each pair scored under the watchdog in a run the
    kernel mechanism was to enforce (``kernel``): its group could not be made."""
    if on_warning is None or not kernel:
        return on_progress

    def told(progress: Progress) -> None:
        v = progress.verdict
        if (v is not None and not progress.kept and v.limits is not None
                and v.limits.mechanism == "watchdog"):
            on_warning(resources.downgrade_warning(f"{v.submission.id}/{v.problem.id}"))
        if on_progress is not None:
            on_progress(progress)

    return told


def _load_key(path: Path) -> Signer:
    from lean_eval.outputs import signing  # cryptography: only for runs that sign

    return signing.load_signing_key(path)


def _run_options(request: ScoreRequest, setup: Setup) -> RunOptions:
    """The options the pipeline runs with; the resume keys use the probe policy asked for."""
    intended = not_probed(setup.tools)
    if not request.skip_probes:
        intended = intended.model_copy(update={"skipped": False})
    return RunOptions(
        out_dir=request.out, timeout=request.timeout, work_dir=request.work_dir,
        limits=request.limits, keep_work=request.keep_work, preflight=intended,
        max_written_file_bytes=request.max_written_file_bytes, jobs=request.jobs,
        rescore=request.rescore, shard=setup.shard,
        pair_limits=PairLimits(memory_limit=request.memory_limit,
                               max_processes=request.max_processes,
                               disk_limit=request.disk_limit or None,
                               disk_files=request.disk_files or None),
        disk_reserve=request.disk_reserve or None,
        private=tuple(p.absolute() for p in request.private), sign_key=setup.signer,
        secret_files=_secrets(request))


def _secrets(request: ScoreRequest) -> tuple[Path, ...]:
    """Files no sandbox may read, whoever runs the harness (masked file by file)."""
    return () if request.sign_key is None else (request.sign_key.absolute(),)


def _preflight(planned: batch.Batch, request: ScoreRequest, setup: Setup,
               env: Mapping[str, str],
               on_probes: Callable[[tuple[ProbeResult, ...]], None] | None,
               on_warning: Callable[[str], None] | None) -> Preflight:
    """The run's probe record, decided once from the plan."""
    if planned.interrupted:  # nothing will be scored
        return planned.planned.preflight.model_copy(
            update={"reason": "interrupted before the probes ran"})
    if request.skip_probes:
        _warn(on_warning, [preflight.SKIPPED_PROBES])
        return not_probed(setup.tools)
    if not planned.planned.needs_sandbox:  # not a warning: preflight.reason says so
        return preflight.not_needed(setup.tools)
    # Outside the run's signal handlers: Ctrl-C stops the probes at once.
    return preflight.preflight(setup.tools, env, request.work_dir, on_probes,
                               secrets=_secrets(request))


def _refusal(out_dir: Path, setup: Setup, exc: ProbesFailedError, started_at: str) -> str:
    """Record the refused run in ``out_dir`` (design §5.5); the message says where."""
    try:
        written = write_refusal(out_dir, setup.cat, setup.tools, exc.preflight, str(exc),
                                started_at, out_lock=setup.held)
    except LeanEvalError as why:  # --out unwritable: say so, go on refusing
        return f"{exc}; no summary was written: {why}"
    return f"{exc}; the probes' outcome is in {written}"


def _selection(set_name: str | None, statuses: Sequence[str], tags: Sequence[str]) -> Selection:
    return Selection(set_name=set_name, statuses=tuple(statuses), tags=tuple(tags))


def validate_submission(path: StrPath, *, benchmark: StrPath | None = None,
                        benchmark_rev: str = "HEAD", problems: Iterable[str] | None = None,
                        set_name: str | None = None, statuses: Sequence[str] = (),
                        tags: Sequence[str] = (), limits: IntakeLimits = DEFAULT_LIMITS,
                        on_warning: Callable[[str], None] | None = None) -> SubmissionCheck:
    """What :func:`score` would do with the submission at ``path``, without Lean, as
    ``lean-eval validate-submission`` does: per problem whether it would be scored or is
    ``unchanged``, what is ignored, every rejection with the entry it names
    (``SubmissionCheck.ok`` False). Keywords as for :func:`score`; ``on_warning`` gets the
    catalog's warnings. Raises :class:`UsageError` (no submission, an unknown problem id) or
    :class:`CatalogError`."""
    return _keywords(validate_request)(
        path, benchmark=benchmark, benchmark_rev=benchmark_rev, problems=problems,
        set_name=set_name, statuses=statuses, tags=tags, limits=limits, on_warning=on_warning)


def validate_request(path: StrPath, *, benchmark: StrPath | None = None,
                     benchmark_rev: str = "HEAD", problems: Iterable[str] | None = None,
                     set_name: str | None = None, statuses: Sequence[str] = (),
                     tags: Sequence[str] = (), limits: IntakeLimits = DEFAULT_LIMITS,
                     on_warning: Callable[[str], None] | None = None) -> SubmissionCheck:
    """:func:`validate_submission` with errors worded for the command line, which calls it."""
    submission = Path(path)
    selected = frozenset(problems or ()) or None
    arguments.check_submission(submission)
    bench = Path(benchmark) if benchmark is not None else default_benchmark()
    every = arguments.problem_ids(bench)
    arguments.check_problems(selected or (), every)
    cat = load_selected(bench, benchmark_rev, selected, _selection(set_name, statuses, tags))
    _warn(on_warning, cat.warnings)
    return precheck.check_submission(submission, cat, limits,
                                     frozenset(every) - frozenset(cat.problems))


@_keywords
def load_catalog(benchmark: StrPath | None = None, *, revision: str | None = "HEAD",
                 problems: Iterable[str] | None = None, set_name: str | None = None,
                 statuses: Sequence[str] = (), tags: Sequence[str] = ()) -> Catalog:
    """The benchmark's problems, trusted files and pins, validated as :func:`score` loads them.

    ``benchmark`` defaults to the current git checkout, read at ``revision`` (``None``: the
    working tree; ``Catalog.warnings`` says when it differs); the other keywords narrow it as
    for :func:`score`. Raises :class:`CatalogError` or :class:`UsageError`.
    """
    return load_selected(Path(benchmark) if benchmark is not None else None, revision,
                         frozenset(problems or ()) or None, _selection(set_name, statuses, tags))


@_keywords
def read_output(out: StrPath) -> Run:
    """An output directory of :func:`score` or ``merge``: its summary and each pair's verdict
    (None where unreadable), checked as ``report`` checks it. Raises :class:`UsageError`
    without a readable ``summary.json``, :class:`OutputRefusedError` when it holds what no run
    writes."""
    return run_report.load_run(Path(out))
