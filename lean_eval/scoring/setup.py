"""A run's setup (design §5.5 "Order of checks"): every check that needs no sandbox is tried,
and every failure found is one ``SetupError`` (exit 2); a fresh ``--out`` is created only when
all passed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, TypeVar

from lean_eval.benchmark.catalog import Catalog
from lean_eval.benchmark.checkout import default_benchmark, load_selected, pinned_name
from lean_eval.benchmark.sets import Selection
from lean_eval.benchmark.toolchain import check_release, resolve_toolchain, standin_hint
from lean_eval.errors import SetupError, UsageError
from lean_eval.sandbox import bubblewrap
from lean_eval.sandbox import identity as sandbox_identity
from lean_eval.scoring import arguments
from lean_eval.scoring.batch import check_places
from lean_eval.scoring.options import Signer, Tools
from lean_eval.scoring.request import ScoreRequest
from lean_eval.scoring.shard import Shard, parse_shard
from lean_eval.supervise import lock, resources

T = TypeVar("T")


def one_error(errors: Sequence[SetupError]) -> SetupError:
    """Several setup errors as one (exit 2, one message): each named, in the order found."""
    if len(errors) == 1:
        return errors[0]
    return SetupError(arguments.joined([str(e) for e in errors]))


def resolve_tools(name: str, toolchain: Path | None, bwrap_path: str | None,
                  allow_bwrap: str | None, env: Mapping[str, str],
                  writable: Sequence[Path], release: bool = False,
                  benchmark: Path | None = None,
                  sandbox_user: str | None = None) -> Tools:
    """The toolchain, bwrap and the sandbox identity (``--sandbox-user``, None: the default);
    every problem with any, and every tool the identity cannot reach, is named in one error.
    ``release``: also refuse a pinned release that cannot run the driver; ``benchmark``: where
    a missing release's error looks for the stand-in to mention (``standin_hint``)."""
    errors: list[SetupError] = []
    lean = bwrap = user = None
    try:
        user = sandbox_identity.resolve(sandbox_user)
    except SetupError as exc:
        errors.append(exc)
    try:
        if release:
            check_release(toolchain, name)
        lean = resolve_toolchain(toolchain, env, name, standin_hint(benchmark))
    except SetupError as exc:
        errors.append(exc)
    try:
        bwrap = bubblewrap.resolve_bwrap(bwrap_path, env, list(writable), allow_bwrap)
    except SetupError as exc:
        errors.append(exc)
    if lean is None or bwrap is None or user is None:
        raise one_error(errors)
    needs = [("the toolchain", lean.root, sandbox_identity.READ | sandbox_identity.EXECUTE),
             ("its lake", lean.lake, sandbox_identity.EXECUTE),
             ("its nanoda", lean.nanoda, sandbox_identity.EXECUTE),
             ("bubblewrap", bwrap.path, sandbox_identity.EXECUTE)]
    refused = sandbox_identity.unreachable(user, needs, _reach_hints(env))
    if refused is not None:
        raise refused
    return Tools(toolchain=lean, bwrap=bwrap, user=user)


def _reach_hints(env: Mapping[str, str]) -> list[tuple[Path, str]]:
    """How to fix a tool that ``lean-eval prepare`` put under the harness's home."""
    prefix = bubblewrap.prepared_prefix(env)
    elan = Path(env.get("ELAN_HOME") or Path(env.get("HOME", "~")) / ".elan").expanduser()
    return [(prefix, ("as root, install it where every user can reach it: run "
                      "`XDG_DATA_HOME=/usr/local/share lean-eval prepare` and run-eval with the "
                      "same XDG_DATA_HOME, or pass --bwrap with a system bubblewrap "
                      "(apt-get install bubblewrap)")),
            (elan, ("as root, install the toolchain where every user can reach it: run "
                    "`ELAN_HOME=/opt/elan lean-eval prepare` and run-eval with the same "
                    "ELAN_HOME, or pass --toolchain DIR under a directory every user can "
                    "enter"))]


def check_reach(tools: Tools, cat: Catalog, work_dir: Path | None) -> None:
    """What a run's sandbox identity reaches besides the tools: the shared packages bound
    read-only into every sandbox, and where the scoring directories go."""
    where = work_dir if work_dir is not None else Path(tempfile.gettempdir())
    while not where.exists() and where != where.parent:  # made 0711 when run-eval creates it
        where = where.parent
    needs = [("the scoring directory's parent", where, sandbox_identity.EXECUTE)]
    if cat.shared_packages is not None:
        needs.append(("the shared packages", cat.shared_packages,
                      sandbox_identity.READ | sandbox_identity.EXECUTE))
    refused = sandbox_identity.unreachable(tools.sandbox_user, needs)
    if refused is not None:
        raise refused


def tools_for(cat: Catalog, toolchain: Path | None, bwrap_path: str | None,
              allow_bwrap: str | None, env: Mapping[str, str],
              writable: Sequence[Path]) -> Tools:
    """The tools that score ``cat``: its pinned release must be one the driver runs on."""
    check_release(toolchain, cat.toolchain_name)
    return resolve_tools(cat.toolchain_name, toolchain, bwrap_path, allow_bwrap, env, writable,
                         benchmark=cat.root)


def check_work_dir(work_dir: Path) -> None:
    """``--work-dir`` must be a directory this user can create entries in, or be creatable
    where it would go (nothing is created here): a UsageError naming it, before any planning,
    instead of an OSError from the first pair or probe that writes there."""
    for place in (work_dir, *work_dir.absolute().parents):
        if not os.path.lexists(place):
            continue
        if not place.is_dir():
            what = "is not a directory" if place == work_dir else (
                f"cannot be created: {place} is not a directory")
            raise UsageError(f"--work-dir {work_dir} {what}")
        if not os.access(place, os.W_OK | os.X_OK):
            what = "is not writable" if place == work_dir else (
                f"cannot be created: {place} is not writable")
            raise UsageError(f"--work-dir {work_dir} {what} by this user (uid {os.geteuid()}); "
                             "pass a directory you can write, or leave --work-dir out (the "
                             "system temp dir)")
        return



class Setup(NamedTuple):
    """A run that may go ahead: its checked inputs, catalog and tools, ``--out`` locked."""

    submissions: tuple[arguments.Submission, ...]  # ids checked
    shard: Shard | None
    signer: Signer | None
    cat: Catalog
    tools: Tools
    held: lock.OutLock  # the caller closes it


def _kernel_takes(request: ScoreRequest) -> None:
    """UsageError naming the option whose value the kernel mechanism refuses (tried on a probe
    group): refused up front, never a run whose every pair falls back to the watchdog."""
    why = resources.refused(resources.PairLimits(request.memory_limit, request.max_processes))
    if why is not None:
        raise UsageError(why)


def checked_setup(request: ScoreRequest, env: Mapping[str, str],
                  load_key: Callable[[Path], Signer]) -> Setup:
    """Every check of ``request`` that needs no sandbox (module doc); on success ``--out``
    exists and its lock is held. ``env``: where the tools are found."""
    errors: list[SetupError] = []

    def attempt(check: Callable[[], T]) -> T | None:
        try:
            return check()
        except SetupError as exc:
            errors.append(exc)
            return None

    r = request
    out_dir, work_dir = r.out, r.work_dir
    selected = frozenset(r.problems) or None
    selection = Selection(set_name=r.set_name, statuses=r.statuses, tags=r.tags)
    shard = attempt(lambda: parse_shard(r.shard) if r.shard is not None else None)
    sign_key = r.sign_key
    signer = attempt(lambda: load_key(sign_key) if sign_key is not None else None)
    bench = r.benchmark or default_benchmark()
    found = len(errors)
    attempt(lambda: arguments.check_run(r.submissions, out_dir, work_dir, selected, bench))
    if work_dir is not None:
        attempt(lambda: check_work_dir(work_dir))
    # an unknown --problem is named once, by check_run; the catalog then only names the release
    narrow = selected if len(errors) == found else None
    checked = attempt(lambda: arguments.check_ids(r.submissions))
    cat = attempt(lambda: load_selected(r.benchmark, r.benchmark_rev, narrow, selection))
    writable = [out_dir, Path(tempfile.gettempdir()), *([work_dir] if work_dir else [])]
    name = cat.toolchain_name if cat else pinned_name(bench)
    tools = None
    if name is None and r.toolchain is None:  # no release to look for: the catalog error says why
        attempt(lambda: bubblewrap.resolve_bwrap(r.bwrap, env, writable, r.allow_bwrap_version))
    else:
        tools = attempt(lambda: resolve_tools(name or "", r.toolchain, r.bwrap,
                                              r.allow_bwrap_version, env, writable,
                                              release=True, benchmark=bench,
                                              sandbox_user=r.sandbox_user))
    attempt(lambda: _kernel_takes(r))
    if tools is not None and cat is not None:
        attempt(lambda: check_reach(tools, cat, work_dir))
    held = attempt(lambda: lock.OutLock.if_present(out_dir.resolve()))
    if errors or checked is None or cat is None or tools is None:
        if held is not None:
            held.close()
        raise one_error(errors)
    try:
        check_places([s.path for s in checked], out_dir, work_dir, cat, tools)
    except SetupError:
        if held is not None:
            held.close()
        raise
    if held is None:  # a fresh --out: created only now that the run can go ahead
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--out {out_dir} cannot be created: {exc.strerror}") from None
        held = lock.OutLock(out_dir.resolve())
    return Setup(checked, shard, signer, cat, tools, held)
