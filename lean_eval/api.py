"""The documented Python API of lean-eval: score a batch, check a submission, load a catalog,
read an output directory.

Every name in ``__all__`` is covered by the semver promise in README.md ("Python API"); every
other module of ``lean_eval`` is internal and may change in any release. The functions here do
what the CLI commands do (``run-eval`` calls :func:`score`) but never print and never exit:
results are the versioned models below, failures are the typed errors of ``errors.py``
(re-exported here), and what the CLI would show while working is handed to optional callbacks.
They read no config file and no environment variable: pass every setting explicitly, and
the environment tools are found with as ``env=`` (``os.environ`` to behave as the CLI).

>>> from pathlib import Path
>>> from lean_eval import api
>>> import os
>>> summary = api.score([Path("examples/submissions/correct")], Path("out"),
...                     env=os.environ)  # doctest: +SKIP
>>> [p.verdict for p in summary.pairs]  # doctest: +SKIP
['accepted', 'accepted', 'accepted', 'accepted', 'accepted']
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

from lean_eval import session
from lean_eval.benchmark.catalog import Catalog
from lean_eval.benchmark.sets import Selection
from lean_eval.errors import (
    CatalogError,
    DigestMismatchError,
    ExportRefusedError,
    LeanEvalError,
    MergeRefusedError,
    OutputError,
    OutputRefusedError,
    PrepareError,
    ProcessStartError,
    ReplayRefusedError,
    SandboxUnavailableError,
    SetupError,
    SigningKeyError,
    ToolchainError,
    TrustedConfigError,
    UsageError,
)
from lean_eval.intake.bounds import DEFAULT_LIMITS, IntakeLimits
from lean_eval.outputs.report import run_report
from lean_eval.outputs.report.run_report import Run
from lean_eval.records.documents import ProblemCheck, SubmissionCheck
from lean_eval.records.probe_result import ProbeResult
from lean_eval.records.verdict import PairSummary, Preflight, Summary, Verdict
from lean_eval.scoring import arguments, batch, precheck
from lean_eval.scoring.driver import DEFAULT_MAX_FILE_BYTES
from lean_eval.scoring.options import RunOptions, not_probed
from lean_eval.scoring.scheduler import Progress
from lean_eval.session import ProbesFailedError
from lean_eval.supervise.disk import DEFAULT_DISK_BYTES as DEFAULT_DISK_LIMIT
from lean_eval.supervise.disk import DEFAULT_DISK_FILES, DEFAULT_DISK_RESERVE
from lean_eval.supervise.resources import DEFAULT_MAX_PROCESSES, DEFAULT_MEMORY_LIMIT

__all__ = [
    "DEFAULT_DISK_FILES", "DEFAULT_DISK_LIMIT", "DEFAULT_DISK_RESERVE",
    "DEFAULT_MAX_PROCESSES", "DEFAULT_MAX_WRITTEN_FILE_BYTES", "DEFAULT_MEMORY_LIMIT",
    "DEFAULT_TIMEOUT", "Catalog", "CatalogError", "DigestMismatchError", "ExportRefusedError",
    "IntakeLimits", "LeanEvalError", "MergeRefusedError", "OutputError", "OutputRefusedError",
    "PairSummary", "PrepareError", "ProbeResult", "ProbesFailedError", "ProblemCheck",
    "ProcessStartError", "Progress", "ReplayRefusedError", "Run", "SandboxUnavailableError",
    "SetupError", "SigningKeyError", "SubmissionCheck", "Summary", "ToolchainError",
    "TrustedConfigError", "UsageError", "Verdict", "load_catalog", "read_output", "score",
    "validate_submission",
]

StrPath = str | os.PathLike[str]

DEFAULT_TIMEOUT = 1800.0  # seconds per pair, as `run-eval --timeout`
DEFAULT_MAX_WRITTEN_FILE_BYTES = DEFAULT_MAX_FILE_BYTES  # `run-eval --max-written-file-bytes`


def _path(value: StrPath | None) -> Path | None:
    return None if value is None else Path(value)


def _selected(problems: Iterable[str] | None) -> frozenset[str] | None:
    return frozenset(problems or ()) or None


def _warn(on_warning: Callable[[str], None] | None, warnings: Iterable[str]) -> None:
    if on_warning is not None:
        for warning in warnings:
            on_warning(warning)


def score(submissions: Sequence[StrPath], out: StrPath, *,
          benchmark: StrPath | None = None, benchmark_rev: str = "HEAD",
          problems: Iterable[str] | None = None, set_name: str | None = None,
          statuses: Sequence[str] = (), tags: Sequence[str] = (),
          toolchain: StrPath | None = None, bwrap: str | None = None,
          allow_bwrap_version: str | None = None, skip_probes: bool = False,
          timeout: float = DEFAULT_TIMEOUT, limits: IntakeLimits = DEFAULT_LIMITS,
          max_written_file_bytes: int = DEFAULT_MAX_WRITTEN_FILE_BYTES,
          jobs: int | None = None, memory_limit: int = DEFAULT_MEMORY_LIMIT,
          max_processes: int = DEFAULT_MAX_PROCESSES,
          disk_limit: int = DEFAULT_DISK_LIMIT, disk_files: int = DEFAULT_DISK_FILES,
          disk_reserve: int = DEFAULT_DISK_RESERVE, work_dir: StrPath | None = None,
          keep_work: bool = False, rescore: bool = False, shard: str | None = None,
          private: Sequence[StrPath] = (), sign_key: StrPath | None = None,
          env: Mapping[str, str],
          on_progress: Callable[[Progress], None] | None = None,
          on_probes: Callable[[tuple[ProbeResult, ...]], None] | None = None,
          on_warning: Callable[[str], None] | None = None) -> Summary:
    """Score every (submission, problem) pair, as ``lean-eval run-eval`` does.

    Writes ``<out>/<submission>/<problem>.json`` verdicts (and logs) and ``<out>/summary.json``,
    and returns that summary. A re-run on the same ``out`` resumes: verdicts whose inputs,
    identity and options are unchanged are kept (``rescore=True``: none is).

    ``submissions`` are directories or ``.tar``/``.tar.gz``/``.tgz`` archives. Each keyword is
    the ``run-eval`` option of the same name with the same default: ``benchmark`` (default: the
    current git checkout), ``benchmark_rev``, ``problems`` (ids; None or empty: all),
    ``set_name``/``statuses``/``tags`` (``--set``/``--status``/``--tag``), ``toolchain``
    (default: the elan install of the benchmark's lean-toolchain), ``bwrap``,
    ``allow_bwrap_version``, ``skip_probes``, ``timeout`` (seconds per pair), ``limits`` (the
    intake limits, ``--max-file-bytes`` and the rest), ``max_written_file_bytes``, ``jobs``
    (None: the CPUs, fewer when memory is short), ``memory_limit`` and ``max_processes`` (per
    pair), ``disk_limit`` and ``disk_files`` (per pair) and ``disk_reserve`` (free space
    admission keeps; 0 turns each of the three off), ``work_dir``, ``keep_work``, ``rescore``,
    ``shard`` (``"K/N"``), ``private`` (directories also hidden from every sandbox) and
    ``sign_key`` (an Ed25519 PEM key: signed envelopes beside every verdict). ``env``
    (required) is the environment tools are found with and pairs are run from; ``run-eval``
    passes its own, so ``env=os.environ`` scores as it does (the API reads no environment by
    itself, design §3).

    Steps, in order: argument checks, catalog load, tool resolution, the preflight probes
    (unless ``skip_probes``), then the batch. Callbacks: ``on_warning`` gets each warning
    (a dirty benchmark working tree, skipped probes); ``on_probes`` every probe's entry once
    they ran; ``on_progress`` an event each time a pair starts or ends.

    Raises :class:`SetupError` (or a subclass: :class:`UsageError`, :class:`CatalogError`,
    :class:`ToolchainError`, :class:`SandboxUnavailableError`, :class:`SigningKeyError`) when
    nothing could be scored, :class:`ProbesFailedError` when a probe failed (the refusal is
    recorded in ``out``), and :class:`OutputError` when ``out`` became unwritable mid-run
    (verdicts already written stay valid). A rejected proof is a verdict, never an exception;
    ``Summary.exit_code`` is what ``run-eval`` would exit with.
    """
    caller_env = dict(env)
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    paths = [Path(p) for p in submissions]
    out_dir, work = Path(out), _path(work_dir)
    setup = session.checked_setup(
        paths, out_dir, work, _selected(problems), shard,
        _path(sign_key), _path(benchmark), benchmark_rev,
        Selection(set_name=set_name, statuses=tuple(statuses), tags=tuple(tags)),
        _path(toolchain), bwrap, allow_bwrap_version, caller_env)
    cat, tools = setup.cat, setup.tools
    try:
        _warn(on_warning, cat.warnings)
        # The resume keys use the probe policy asked for; the probes themselves run once the
        # batch is planned, and only when a pair needs a sandbox (batch.run_batch's ``probe``).
        intended = not_probed(tools)
        if not skip_probes:
            intended = intended.model_copy(update={"skipped": False})
        options = RunOptions(out_dir=out_dir, timeout=timeout, work_dir=work,
                             limits=limits, keep_work=keep_work, preflight=intended,
                             max_written_file_bytes=max_written_file_bytes, jobs=jobs,
                             rescore=rescore, shard=setup.shard,
                             memory_limit=memory_limit, max_processes=max_processes,
                             disk_limit=disk_limit or None,
                             disk_files=disk_files or None,
                             disk_reserve=disk_reserve or None,
                             private=tuple(Path(p).absolute() for p in private),
                             sign_key=setup.signer)

        def probe(needed: bool) -> Preflight:
            if skip_probes:
                _warn(on_warning, [session.SKIPPED_PROBES])
                return not_probed(tools)
            if not needed:
                _warn(on_warning, [f"probes not run: {session.NOTHING_TO_SCORE}"])
            return session.preflight(tools, caller_env, work, on_probes, needed)

        try:
            return batch.run_batch(setup.submissions, cat, tools, options, caller_env,
                                   on_progress=on_progress, out_lock=setup.held, probe=probe)
        except ProbesFailedError as exc:
            raise ProbesFailedError(session.record_refusal(out_dir, cat, tools, exc, started_at,
                                                           setup.held),
                                    exc.preflight) from None
    finally:
        setup.held.close()


def validate_submission(path: StrPath, *, benchmark: StrPath | None = None,
                        benchmark_rev: str = "HEAD", problems: Iterable[str] | None = None,
                        set_name: str | None = None, statuses: Sequence[str] = (),
                        tags: Sequence[str] = (), limits: IntakeLimits = DEFAULT_LIMITS,
                        on_warning: Callable[[str], None] | None = None) -> SubmissionCheck:
    """What :func:`score` would do with the submission at ``path``, decided without Lean, as
    ``lean-eval validate-submission`` does: per problem whether it would be scored or is
    ``unchanged``, what is ignored, and every rejection with the entry it names, under
    ``limits``. ``SubmissionCheck.ok`` is False when anything would be rejected.

    ``benchmark``, ``benchmark_rev``, ``problems``, ``set_name``, ``statuses`` and ``tags`` are
    as for :func:`score`; ``on_warning`` gets the catalog's warnings. Raises
    :class:`UsageError` for a path that is no submission or an unknown problem id and
    :class:`CatalogError` for an unusable benchmark.
    """
    submission = Path(path)
    selected = _selected(problems)
    arguments.check_submission(submission)
    bench = _path(benchmark) or session.default_benchmark()
    arguments.check_problems(selected or (), arguments.problem_ids(bench))
    cat = session.load_selected(bench, benchmark_rev, selected,
                                Selection(set_name=set_name, statuses=tuple(statuses),
                                          tags=tuple(tags)))
    _warn(on_warning, cat.warnings)
    return precheck.check_submission(submission, cat, limits)


def load_catalog(benchmark: StrPath | None = None, *, revision: str | None = "HEAD",
                 problems: Iterable[str] | None = None, set_name: str | None = None,
                 statuses: Sequence[str] = (), tags: Sequence[str] = ()) -> Catalog:
    """The benchmark's problems, trusted files and pins, validated as :func:`score` loads them.

    ``benchmark`` defaults to the current git checkout. In a git checkout the files are read
    from ``revision`` (``None``: the working tree as it stands); ``Catalog.warnings`` says when
    the working tree differs. ``problems``, ``set_name``, ``statuses`` and ``tags`` narrow it
    as for :func:`score`. Raises :class:`CatalogError` (a missing file, a digest mismatch, a
    drifted pin, ...) or :class:`UsageError` (an unknown id, an empty selection).
    """
    return session.load_selected(_path(benchmark), revision, _selected(problems),
                                 Selection(set_name=set_name, statuses=tuple(statuses),
                                           tags=tuple(tags)))


def read_output(out: StrPath) -> Run:
    """An output directory of :func:`score` (or of ``lean-eval merge``): its summary and each
    pair's verdict (None where unreadable), checked as ``lean-eval report`` and ``merge`` check
    it. Raises :class:`UsageError` when there is no readable ``summary.json`` and
    :class:`OutputRefusedError` when the directory holds what no run writes."""
    return run_report.load_run(Path(out))
