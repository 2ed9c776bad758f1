"""The setup a scoring session takes before its first pair, shared by the CLI and the API.

Finding the benchmark, loading (and narrowing) its catalog, resolving the toolchain and
bubblewrap, and running the preflight probes are one implementation here, called by
``lean_eval.cli`` and ``lean_eval.api`` alike. Nothing here prints or exits: what a person
should see (catalog warnings, probe lines) is returned or handed to a caller's callback, and
every failure is a typed error from ``errors.py``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from lean_eval.benchmark import catalog
from lean_eval.benchmark.selection import select_catalog
from lean_eval.benchmark.sets import Selection
from lean_eval.benchmark.toolchain import check_release, resolve_toolchain
from lean_eval.errors import CatalogError, LeanEvalError, ProbesFailedError, SetupError, UsageError
from lean_eval.probes import registry
from lean_eval.records import verdict
from lean_eval.records.probe_result import ProbeResult
from lean_eval.sandbox import bubblewrap
from lean_eval.scoring import arguments
from lean_eval.scoring.options import Tools, not_probed
from lean_eval.scoring.shard import Shard, parse_shard
from lean_eval.scoring.summary import write_refusal
from lean_eval.supervise import lock, process

if TYPE_CHECKING:
    from lean_eval.outputs import signing as attest

T = TypeVar("T")

__all__ = ["SKIPPED_PROBES", "ProbesFailedError", "default_benchmark", "load", "load_selected",
           "preflight", "record_refusal", "resolve_tools", "run_probes", "tools"]

# The warning of a run whose probes were skipped (the CLI prints it, the API hands it on).
NOTHING_TO_SCORE = ("nothing to score: every pair was kept from an earlier run or decided at "
                    "intake without a sandbox")
SKIPPED_PROBES = "--skip-probes: the sandbox was not verified; verdicts of this run record it"


def default_benchmark() -> Path:
    """The benchmark a command works on when none is named: the current git checkout's top
    directory, else the current directory.

    git is asked once per answer that could differ: the answer is kept under the current
    directory and the identity of every ``.git`` and ``HEAD`` entry on the way up from it
    (what git's discovery reads, with no GIT_* variable in its environment), so a checkout
    that appears, moves, is removed or changes owner is asked about again. A command asks this
    for its config file, its benchmark and its setup, and the suite runs hundreds of commands
    in one process."""
    cwd = Path.cwd()
    key = (cwd, *(_entry(place / name) for place in (cwd, *cwd.parents)
                  for name in (".git", "HEAD")))
    found = _DEFAULT_BENCHMARKS.get(key)
    if found is None:
        asked = process.run_capture(("git", "rev-parse", "--show-toplevel"),
                                    env={"PATH": "/usr/bin:/bin"}, cwd=cwd, timeout=30)
        top = asked.stdout.decode().strip() if asked.returncode == 0 else ""
        found = _DEFAULT_BENCHMARKS[key] = Path(top) if top else cwd
    return found


_DEFAULT_BENCHMARKS: dict[tuple[object, ...], Path] = {}


def _entry(path: Path) -> tuple[int, ...] | None:
    """What identifies a directory entry for :func:`default_benchmark`'s memo (None: absent)."""
    try:
        st = path.lstat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_mtime_ns, st.st_ctime_ns


def benchmark_root(given: Path | None) -> Path:
    """``given``, else :func:`default_benchmark`; a directory that is no benchmark checkout is
    refused with the fix, as ``prepare`` says it."""
    root = given or default_benchmark()
    if root.is_dir() and not ((root / "lean-toolchain").is_file()
                              and ((root / "problems").is_dir()
                                   or (root / "workspaces").is_dir())):
        where = "--benchmark " if given else ""
        raise CatalogError(f"{where}{root} is not a benchmark checkout (no lean-toolchain, "
                         "problems/ or workspaces/); pass --benchmark DIR")
    return root


def load(benchmark: Path | None, revision: str | None = "HEAD",
         only: frozenset[str] | None = None) -> catalog.Catalog:
    """The catalog of ``benchmark`` (default :func:`default_benchmark`) at ``revision``; its
    ``warnings`` are the caller's to show."""
    return catalog.load_catalog(benchmark_root(benchmark), revision=revision, only=only)


def load_selected(benchmark: Path | None, revision: str | None, only: frozenset[str] | None,
                  selection: Selection) -> catalog.Catalog:
    """:func:`load`, narrowed to ``only`` (``--problem``) and ``selection`` (``--set``,
    ``--status``, ``--tag``) together."""
    if selection.is_everything:
        return load(benchmark, revision, only)
    return select_catalog(load(benchmark, revision, None), selection, only)


def tools(cat: catalog.Catalog, toolchain: Path | None, bwrap_path: str | None,
          allow_bwrap: str | None, env: Mapping[str, str],
          writable: Sequence[Path]) -> Tools:
    """The tools that score ``cat``: its pinned release must be one the driver runs on."""
    check_release(toolchain, cat.toolchain_name)
    return resolve_tools(cat.toolchain_name, toolchain, bwrap_path, allow_bwrap, env, writable)


def resolve_tools(name: str, toolchain: Path | None, bwrap_path: str | None,
                  allow_bwrap: str | None, env: Mapping[str, str],
                  writable: Sequence[Path], release: bool = False) -> Tools:
    """The toolchain and bwrap; every problem with either is named in one error.

    ``release``: also refuse a pinned release that cannot run the driver.
    """
    errors: list[SetupError] = []
    lean = bwrap = None
    try:
        if release:
            check_release(toolchain, name)
        lean = resolve_toolchain(toolchain, env, name)
    except SetupError as exc:
        errors.append(exc)
    try:
        bwrap = bubblewrap.resolve_bwrap(bwrap_path, env, list(writable), allow_bwrap)
    except SetupError as exc:
        errors.append(exc)
    if lean is None or bwrap is None:
        raise one_error(errors)
    return Tools(toolchain=lean, bwrap=bwrap)


def one_error(errors: Sequence[SetupError]) -> SetupError:
    """Several setup errors as one (exit 2, one message): each named, in the order found."""
    if len(errors) == 1:
        return errors[0]
    texts = [str(e) for e in errors]
    return SetupError(" Also, ".join(t if t.endswith((".", ")")) or i == len(texts) - 1
                                     else t + "." for i, t in enumerate(texts)))


class Setup(NamedTuple):
    """What ``run-eval`` checked before any probe: the run can go ahead with these."""

    submissions: tuple[arguments.Submission, ...]  # ids checked: the batch takes them as they are
    shard: Shard | None
    signer: attest.SigningKey | None
    cat: catalog.Catalog
    tools: Tools
    held: lock.OutLock  # --out's lock, held: the caller closes it


def checked_setup(submissions: Sequence[Path], out_dir: Path, work_dir: Path | None,
                  selected: frozenset[str] | None, shard_text: str | None,
                  sign_key: Path | None, benchmark: Path | None, benchmark_rev: str,
                  selection: Selection, toolchain: Path | None, bwrap_path: str | None,
                  allow_bwrap: str | None, env: Mapping[str, str]) -> Setup:
    """Every check of a run that needs no sandbox (arguments, catalog, pins and release,
    toolchain, bwrap, ``--out``'s lock), all before any probe; every error found is in the one
    ``SetupError`` raised. On success ``--out`` exists and its lock is held; on failure a fresh
    ``--out`` is not created."""
    errors: list[SetupError] = []

    def attempt(check: Callable[[], T]) -> T | None:
        try:
            return check()
        except SetupError as exc:
            errors.append(exc)
            return None

    def signing_key() -> attest.SigningKey | None:
        if sign_key is None:
            return None
        from lean_eval.outputs import signing

        return signing.load_signing_key(sign_key)

    shard = attempt(lambda: parse_shard(shard_text) if shard_text is not None else None)
    signer = attempt(signing_key)
    bench = benchmark or default_benchmark()
    found = len(errors)
    attempt(lambda: arguments.check_run(submissions, out_dir, work_dir, selected, bench))
    # an unknown --problem is named once, by check_run; the catalog then only names the release
    narrow = selected if len(errors) == found else None
    checked = attempt(lambda: arguments.check_ids(submissions))
    cat = attempt(lambda: load_selected(benchmark, benchmark_rev, narrow, selection))
    writable = [out_dir, Path(tempfile.gettempdir()), *([work_dir] if work_dir else [])]
    name = cat.toolchain_name if cat else _pinned_name(bench)
    tools = None
    if name is None and toolchain is None:  # no release to look for: the catalog error says why
        attempt(lambda: bubblewrap.resolve_bwrap(bwrap_path, env, writable, allow_bwrap))
    else:
        tools = attempt(lambda: resolve_tools(name or "", toolchain, bwrap_path, allow_bwrap,
                                              env, writable, release=True))
    held = attempt(lambda: lock.OutLock.if_present(out_dir.resolve()))
    if errors or checked is None or cat is None or tools is None:
        if held is not None:
            held.close()
        raise one_error(errors)
    if held is None:  # a fresh --out: created only now that the run can go ahead
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--out {out_dir} cannot be created: {exc.strerror}") from None
        held = lock.OutLock(out_dir.resolve())
    return Setup(checked, shard, signer, cat, tools, held)


def _pinned_name(benchmark: Path) -> str | None:
    """The benchmark's pinned release read from its working tree, for naming toolchain problems
    in the same message when the catalog itself could not be loaded; None when unreadable."""
    try:
        return (benchmark / "lean-toolchain").read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def run_probes(tools: Tools, env: Mapping[str, str], work_dir: Path | None,
               names: Sequence[str] = ()) -> tuple[ProbeResult, ...]:
    """Each probe (``names``, default all) in turn, timed, in a scratch directory removed
    afterwards."""
    if work_dir is not None:
        work_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="lean-eval-probes-", dir=work_dir))
    ctx = registry.ProbeContext(tools=tools, caller_env=dict(env), scratch=scratch)
    try:
        return registry.run_probes(ctx, names or registry.PROBE_NAMES)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def preflight(tools: Tools, env: Mapping[str, str], work_dir: Path | None,
              on_probes: Callable[[tuple[ProbeResult, ...]], None] | None = None,
              needed: bool = True) -> verdict.Preflight:
    """Run every probe before any pair is scored; the record every verdict carries.

    ``on_probes`` gets every probe's entry once they all ran, before a failure is raised.
    A probe that did not pass raises :class:`ProbesFailedError` (a setup failure). ``needed``
    False (no pair needs a sandbox): no probe runs, and the record says why.
    """
    if not needed:
        return not_probed(tools).model_copy(update={"skipped": False,
                                                    "reason": NOTHING_TO_SCORE})
    entries = run_probes(tools, env, work_dir)
    record = not_probed(tools).model_copy(update={
        "skipped": False,
        "probes": tuple(e.outcome() for e in entries)})
    if on_probes is not None:
        on_probes(entries)
    failed = [e for e in entries if e.status != "pass"]
    if failed:
        raise ProbesFailedError("preflight probe(s) did not pass: "
                                + ", ".join(f"{e.name} ({e.status}: {e.message})"
                                            for e in failed)
                                + "; nothing was scored", record)
    return record


def record_refusal(out_dir: Path, cat: catalog.Catalog, tools: Tools,
                   exc: ProbesFailedError, started_at: str,
                   held: lock.OutLock | None = None) -> str:
    """The refused run's summary in ``out_dir`` (design §5.5), and the message that says
    where."""
    try:
        written = write_refusal(out_dir, cat, tools, exc.preflight, str(exc), started_at,
                                out_lock=held)
    except LeanEvalError as why:  # --out held by another run, or unwritable: say so, go on
        return f"{exc}; no summary was written: {why}"
    return f"{exc}; the probes' outcome is in {written}"
