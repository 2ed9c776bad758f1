"""A sample of 20 hand-made mutations of security-relevant lines, and whether the suite kills each
(issue 13 item 5: the kill count is measured before and after a refactor and must not drop).

Each mutation replaces one exact snippet of ``lean_eval/**/*.py`` by a plausible bug (a dropped
check, an inverted condition, a wrong constant) that keeps the module importable. The snippet is
looked for across the whole package, not in one file, so a mutation still applies after code
moved between modules. A snippet without a trailing newline is matched as a substring of a line;
one ending in a newline is a block of whole lines, matched at any indentation (the replacement
is re-indented to match). A snippet found zero or several times makes its mutation "not
applicable": the script never guesses where it meant to be.

For each mutation: a scratch clone of ``--repo`` at its ``HEAD`` commit (``git clone --shared``, so
uncommitted changes are not measured) under ``--scratch``, the replacement applied, then ``pytest
-x -v -p no:cacheprovider`` on the mutation's first test files and, when they pass, on the whole
suite (``--first-only`` skips that; ``-v`` names the failing test even when pytest's own report
fails, as it does when a hypothesis test fails here). Both runs use the scratch code
(``PYTHONPATH`` and the working directory are the clone, so the suite's stand-in toolchain is the
clone's too). A failing test counts as a kill only when it fails again on the mutant and passes on
the unmutated clone; otherwise it is deselected as flaky or broken and the same pass goes on. The
clone is removed afterwards.

    python3 benchmarks/mutations.py [--repo DIR] [--scratch DIR] [--only NAME ...]
                                    [--first-only] [--json OUT] [--list]

The scratch directory must lie outside the paths Lake masks (``/tmp``, ``/home``, ...), as the
suite's leak tests require.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import re
import shutil
import signal
import stat
import subprocess  # noqa: TID251 - git and pytest run as children against a scratch clone
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "lean_eval"
PASS_TIMEOUT = 3600  # seconds for one pytest run; the whole suite takes about 8-15 minutes
MAX_DESELECTED = 3  # flaky or broken tests skipped in one pass before it is given up
# pytest's short summary line of a failure, and (-v) the progress line of one: the second serves
# when pytest's own reporting fails (an INTERNALERROR, exit 3) before the summary is printed
_FAILED = re.compile(r"^(?:FAILED|ERROR) (?P<node>.+?)(?: - .*)?$")
_FAILED_PROGRESS = re.compile(r"^(?P<node>\S+?\.py(?:::.+?)?) (?:FAILED|ERROR)(?: +\[ *\d+%\])?$")


class Mutation(NamedTuple):
    """One hand-made bug: ``snippet`` (exact text, once in the package) becomes ``replacement``."""

    name: str
    breaks: str  # the security property the bug breaks, one line
    snippet: str
    replacement: str
    first: tuple[str, ...]  # test files (or node ids) likely to kill it, tried first


MUTATIONS: tuple[Mutation, ...] = (
    # --- intake: what is read into the overlay, and how ------------------------------------
    Mutation(
        "readset-reads-non-lean",
        "a file under Submission/ that is not *.lean (notes.md, data.bin) is read into the "
        "overlay instead of being ignored",
        'elif name.endswith(".lean"):\n'
        "    self.lean_file(child, rel)\n"
        "else:\n"
        '    self.ignored.append(f"{shown}: not a .lean file, not read")\n',
        "else:\n"
        "    self.lean_file(child, rel)\n",
        ("tests/intake/test_intake.py",)),
    Mutation(
        "readset-reads-trusted-names",
        "a .lean file beside Submission.lean (a fork's Challenge.lean) enters the overlay, which "
        "may hold only Submission.lean and Submission/**/*.lean",
        'if name not in ("Submission.lean", "Submission"):\n',
        'if name.endswith(".lean") and name != "Submission.lean":\n'
        "    self.lean_file(child, name)\n"
        'elif name not in ("Submission.lean", "Submission"):\n',
        ("tests/intake/test_intake.py",)),
    Mutation(
        "readset-accepts-hard-links",
        "a hard link (a file shared with something outside the submission) is accepted",
        "if met < node.nlink:",
        "if met < 0:",
        ("tests/intake/test_hard_links.py", "tests/intake/test_intake.py")),
    Mutation(
        "readset-nul-only-at-end",
        "a submitted file holding NUL bytes (not at its end) is accepted",
        'if b"\\0" in data:',
        'if data.endswith(b"\\0"):',
        ("tests/intake/test_intake.py",)),
    Mutation(
        "readset-header-only-of-submission-lean",
        "the import header of Submission/**/*.lean helpers is never checked (only "
        "Submission.lean's)",
        "if why := check_header(text):",
        'if rel == "Submission.lean" and (why := check_header(text)):',
        ("tests/intake/test_intake_layout.py", "tests/e2e/test_intake_cli.py")),
    Mutation(
        "readset-no-case-fold",
        "two paths that differ only in case or Unicode form (one file on a case-insensitive "
        "or normalising filesystem) are both accepted",
        "self.keys.setdefault(_fold(rel), rel)",
        "self.keys.setdefault(rel, rel)",
        ("tests/intake/test_intake.py",)),
    Mutation(
        "readset-module-name-prefix",
        "a relpath component that only starts like a Lean identifier (my-dir, A.b) is "
        "accepted as a module name",
        "LEAN_COMPONENT_RE.fullmatch(part)",
        "LEAN_COMPONENT_RE.match(part)",
        ("tests/intake/test_intake.py",)),
    Mutation(
        "intake-identity-without-inode",
        "an entry swapped for another of the same type between lstat and open (TOCTOU) is read",
        "(now.st_dev, now.st_ino, now.st_mode) != (st.st_dev, st.st_ino, st.st_mode)",
        "(now.st_dev, now.st_mode) != (st.st_dev, st.st_mode)",
        ("tests/intake/test_intake.py",)),
    Mutation(
        "intake-stat-follows-links",
        "the walk classifies an entry by what a symlink points to, not by the entry itself",
        "st = os.stat(name, dir_fd=dfd, follow_symlinks=False)",
        "st = os.stat(name, dir_fd=dfd, follow_symlinks=True)",
        ("tests/intake/test_intake.py",)),
    # --- the header lexer ----------------------------------------------------------------------
    Mutation(
        "header-comment-body-from-second-char",
        "the checker reads `/-/- -/` as a nested comment where Lean reads one comment, so an "
        "import Lean reads after it is hidden from the checker",
        "depth, scan = 1, pos + 3",
        "depth, scan = 1, pos + 2",
        ("tests/lean/test_header.py", "tests/lean/test_header_lexing.py")),
    # --- the configuration Lake reads, and the toolchain -------------------------------------
    Mutation(
        "driver-nanoda-not-forced",
        "a trusted config's own external_kernels.nanoda entry wins over the bundled NanoDa",
        'kernels["nanoda"] = [str(nanoda)]',
        'kernels.setdefault("nanoda", [str(nanoda)])',
        ("tests/scoring/test_driver.py",)),
    Mutation(
        "driver-enable-nanoda-kept",
        "enable_nanoda of the trusted config reaches Lake (it could turn NanoDa off)",
        'data.pop("enable_nanoda", None)',
        'data.get("enable_nanoda", None)',
        ("tests/scoring/test_driver.py",)),
    Mutation(
        "driver-nanoda-not-required",
        "a pair is accepted without NanoDa's acceptance line",
        'REQUIRED_KERNELS = ("nanoda", "Lean default")',
        'REQUIRED_KERNELS = ("Lean default",)',
        ("tests/scoring/test_driver.py",)),
    Mutation(
        "driver-toolchain-placement-not-raised",
        "a toolchain inside a writable scoring directory (which a build could rewrite) is used",
        'raise ToolchainError(f"{tool} lies inside a writable scoring directory; refusing it")',
        'ToolchainError(f"{tool} lies inside a writable scoring directory; refusing it")',
        ("tests/e2e/test_setup_failures.py::test_toolchain_inside_the_work_dir_is_refused",)),
    # --- what Lake sees: search path, environment, the wrapper's mounts ----------------------
    Mutation(
        "sandbox-search-path-symlinks-unresolved",
        "a PATH entry that is a symlink into a writable root (a planted .lake/build/bin) is "
        "kept for Lake",
        "real = os.path.realpath(entry)",
        "real = os.path.abspath(entry)",
        ("tests/sandbox/test_sandbox.py",)),
    Mutation(
        "driver-search-path-without-writable-roots",
        "Lake's PATH is filtered against the temp dir only, so a tool planted in the work dir, "
        "the output or the pair's .lake/build/bin is run by Lake outside the sandbox",
        "(*roots, Path(tempfile.gettempdir()))",
        "(Path(tempfile.gettempdir()),)",
        ("tests/e2e/test_invariants.py::test_planted_tools_are_never_executed",)),
    Mutation(
        "sandbox-caller-environment-passed",
        "the caller's whole environment (tokens, LD_PRELOAD, LEAN_PATH) reaches Lake",
        "env = {\n"
        '    "PATH": os.pathsep.join(search_path),\n',
        "env = {\n"
        "    **caller,\n"
        '    "PATH": os.pathsep.join(search_path),\n',
        ("tests/sandbox/test_sandbox.py",)),
    Mutation(
        "wrapper-masks-before-root-bind",
        "the run's masks are dropped, or land before Lake's --ro-bind / / which then covers "
        "them, so a build sees the other inputs and outputs",
        'if [ "$n" -eq $((first + 2)) ]; then\n'
        "  {early_line}\n",
        'if [ "$n" -eq $((first - 1)) ]; then\n'
        "  {early_line}\n",
        ("tests/sandbox/test_sandbox.py",)),
    # --- classification ----------------------------------------------------------------------
    Mutation(
        "driver-exit-128-plus-n-is-rejection",
        "a child Lake reports as exited with 128+n (killed by signal n: OOM, SIGXFSZ) makes the "
        "pair `rejected` instead of a harness error",
        "else n - _SIGNAL_BASE if n > _SIGNAL_BASE else None",
        "else None",
        ("tests/scoring/test_driver.py",)),
    # --- merge: ids from another machine's summary ---------------------------------------------
    Mutation(
        "outputs-id-prefix-match",
        "a shard's summary may name an id that only starts like a valid one (a/../../pwned), so "
        "merge writes outside --out",
        'SUBMISSION_ID_RE.fullmatch if kind == "submission id" else PROBLEM_ID.fullmatch',
        'SUBMISSION_ID_RE.match if kind == "submission id" else PROBLEM_ID.match',
        ("tests/outputs/test_merge_input.py",)),
)


# --- applying a mutation -------------------------------------------------------------------


class Site(NamedTuple):
    """Where a snippet was found, and the file's text with the replacement in place."""

    path: Path
    mutated: str


def _block_sites(text: str, snippet: str, replacement: str) -> list[str]:
    """Every mutated text of a file in which the dedented lines of ``snippet`` occur as whole
    lines at one indentation (the replacement takes that indentation)."""
    want = textwrap.dedent(snippet).splitlines()
    new = textwrap.dedent(replacement).splitlines()
    lines = text.splitlines(keepends=True)
    found = []
    for i in range(len(lines) - len(want) + 1):
        first = lines[i].rstrip("\n")
        if not first.endswith(want[0]):
            continue
        indent = first[: len(first) - len(want[0])]
        if indent.strip() or any(lines[i + k].rstrip("\n") != (indent + want[k] if want[k]
                                                                else "")
                                 for k in range(len(want))):
            continue
        body = "".join(indent + line + "\n" if line else "\n" for line in new)
        found.append("".join(lines[:i]) + body + "".join(lines[i + len(want):]))
    return found


def diff(site: Site, root: Path) -> str:
    """The mutation at ``site`` as a unified diff without context."""
    rel = str(site.path.relative_to(root))
    return "\n".join(difflib.unified_diff(
        site.path.read_text(encoding="utf-8").splitlines(), site.mutated.splitlines(),
        f"a/{rel}", f"b/{rel}", lineterm="", n=0))


def find_sites(root: Path, mutation: Mutation) -> list[Site]:
    """Every place ``mutation.snippet`` occurs in the package under ``root``."""
    sites = []
    for path in sorted((root / PACKAGE).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if mutation.snippet.endswith("\n"):
            sites += [Site(path, t) for t in _block_sites(text, mutation.snippet,
                                                          mutation.replacement)]
        else:
            start = 0
            while (at := text.find(mutation.snippet, start)) >= 0:
                sites.append(Site(path, text[:at] + mutation.replacement
                                  + text[at + len(mutation.snippet):]))
                start = at + 1
    return sites


# --- running things in the scratch clone ---------------------------------------------------


class Ran(NamedTuple):
    returncode: int
    output: str
    seconds: float


def run(argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None,
        timeout: float = PASS_TIMEOUT) -> Ran:
    """Run ``argv`` in its own process group; on timeout the whole group is killed."""
    started = time.monotonic()
    child = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, _ = child.communicate()
        return Ran(-1, out.decode(errors="replace") + f"\n[timed out after {timeout}s]",
                   time.monotonic() - started)
    except BaseException:  # Ctrl-C: its own session does not get the terminal's SIGINT
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        raise
    return Ran(child.returncode, out.decode(errors="replace"), time.monotonic() - started)


def git(*args: str, cwd: Path) -> str:
    done = run(("git", *args), cwd=cwd, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed in {cwd}: {done.output.strip()}")
    return done.output.strip()


def _writable(func: Callable[..., Any], path: str, _exc: object) -> None:
    """rmtree's error handler: a test may leave entries without write or search permission."""
    parent = os.path.dirname(path)
    os.chmod(parent, os.stat(parent).st_mode | stat.S_IRWXU)
    if os.path.isdir(path) and not os.path.islink(path):
        os.chmod(path, os.stat(path).st_mode | stat.S_IRWXU)
    func(path)


def remove(path: Path) -> None:
    if path.exists() or path.is_symlink():
        shutil.rmtree(path, onerror=_writable)


def scratch_env(clone: Path) -> dict[str, str]:
    """The caller's environment with the clone first on the import path and no pytest state."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "COV_CORE_")) and k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(clone)
    return env


def clone_at(repo: Path, commit: str, clone: Path) -> None:
    remove(clone)
    clone.parent.mkdir(parents=True, exist_ok=True)
    git("clone", "--shared", "-q", str(repo), str(clone), cwd=clone.parent)
    git("checkout", "-q", commit, cwd=clone)


def module_of(clone: Path, path: Path) -> str:
    return ".".join(path.relative_to(clone).with_suffix("").parts)


def imports_from(clone: Path, module: str) -> str | None:
    """None when ``module`` imports from the clone; else why not (a broken or misplaced mutant)."""
    code = "import importlib, sys; print(importlib.import_module(sys.argv[1]).__file__)"
    done = run((sys.executable, "-c", code, module), cwd=clone, env=scratch_env(clone),
               timeout=300)
    lines = done.output.strip().splitlines()
    if done.returncode != 0 or not lines:
        return f"import {module} failed: {done.output.strip()[-500:]}"
    if not lines[-1].startswith(str(clone) + "/"):
        return f"import {module} came from {lines[-1]}, not from the scratch clone"
    return None


def pytest(clone: Path, tests: Sequence[str], deselected: Sequence[str] = ()) -> Ran:
    argv = [sys.executable, "-m", "pytest", "-x", "-v", "-p", "no:cacheprovider",
            "--hypothesis-profile=ci", *tests]  # every example count, as the whole check
    for node in deselected:
        argv += ["--deselect", node]
    return run(argv, cwd=clone, env=scratch_env(clone))


def first_failure(output: str) -> str | None:
    """The node id of the first FAILED or ERROR line of pytest's short summary, else of the
    first failing progress line."""
    lines = [line.strip() for line in output.splitlines()]
    for pattern in (_FAILED, _FAILED_PROGRESS):
        for line in lines:
            if match := pattern.match(line):
                return match["node"]
    return None


def _existing(clone: Path, tests: Sequence[str]) -> list[str]:
    return [t for t in tests if (clone / t.split("::")[0]).exists()]


class Result(NamedTuple):
    name: str
    file: str | None
    breaks: str
    status: str  # killed, survived, not applicable, error
    stage: str | None  # first (the mutation's first tests) or suite (the whole suite)
    test: str | None  # the confirmed killing test
    seconds: float
    notes: tuple[str, ...]


class _UnclearError(Exception):
    """A pass that neither passed nor named a test that kills the mutant."""


def _confirm(clone: Path, site: Site, original: str, node: str) -> str:
    """"killed" when ``node`` fails again on the mutant and passes without the mutation;
    "flaky" when it passes on the mutant, "broken" when it fails without the mutation."""
    if pytest(clone, [node]).returncode == 0:
        return "flaky"
    site.path.write_text(original, encoding="utf-8")
    try:
        unmutated = pytest(clone, [node]).returncode
    finally:
        site.path.write_text(site.mutated, encoding="utf-8")
    return "killed" if unmutated == 0 else "broken"


def _pass(clone: Path, site: Site, original: str, tests: Sequence[str],
          notes: list[str]) -> str | None:
    """Run ``tests`` (the whole suite when empty) with -x: the confirmed killing node, or None
    when they pass; _UnclearError when neither can be said."""
    what = " ".join(tests) or "the whole suite"
    deselected: list[str] = []
    while True:
        done = pytest(clone, tests, deselected)
        notes.append(f"{what}: exit {done.returncode} in {done.seconds:.0f}s")
        if done.returncode == 0:
            return None
        if done.returncode in (4, 5):  # usage error (no such file or node) or nothing collected
            raise _UnclearError(f"{what} could not run: {done.output.strip()[-300:]}")
        node = first_failure(done.output)
        if node is None:
            raise _UnclearError(f"{what}: no failing test in the output: "
                                f"{done.output.strip()[-500:]}")
        verdict = _confirm(clone, site, original, node)
        if verdict == "killed":
            notes.append(f"{node}: fails again on the mutant and passes without it")
            return node
        notes.append(f"{node}: {verdict}, deselected")
        deselected.append(node)
        if len(deselected) > MAX_DESELECTED:
            raise _UnclearError(f"{what}: more than {MAX_DESELECTED} flaky or broken tests")


def measure(mutation: Mutation, repo: Path, commit: str, scratch: Path,
            first_only: bool) -> Result:
    """Clone, mutate, run the first tests and then (unless ``first_only``) the whole suite."""
    started = time.monotonic()
    clone = scratch / mutation.name
    notes: list[str] = []

    def result(status: str, file: str | None = None, stage: str | None = None,
               test: str | None = None) -> Result:
        return Result(mutation.name, file, mutation.breaks, status, stage, test,
                      round(time.monotonic() - started, 1), tuple(notes))

    clone_at(repo, commit, clone)
    try:
        sites = find_sites(clone, mutation)
        if len(sites) != 1:
            where = sorted({str(s.path.relative_to(clone)) for s in sites})
            notes.append(f"snippet found {len(sites)} times"
                         + (f" ({', '.join(where)})" if where else ""))
            return result("not applicable")
        site = sites[0]
        rel = str(site.path.relative_to(clone))
        original = site.path.read_text(encoding="utf-8")
        site.path.write_text(site.mutated, encoding="utf-8")
        problem = imports_from(clone, module_of(clone, site.path))
        if problem is not None:
            notes.append(problem)
            return result("error", rel)
        first = _existing(clone, mutation.first)
        if missing := sorted(set(mutation.first) - set(first)):
            notes.append(f"first tests not in this checkout: {', '.join(missing)}")
        try:
            if first and (node := _pass(clone, site, original, first, notes)) is not None:
                return result("killed", rel, "first", node)
        except _UnclearError as exc:
            notes.append(str(exc))  # the whole suite decides
        if first_only:
            return result("survived first tests", rel)
        try:
            if (node := _pass(clone, site, original, [], notes)) is not None:
                return result("killed", rel, "suite", node)
        except _UnclearError as exc:
            notes.append(str(exc))
            return result("error", rel)
        return result("survived", rel)
    finally:
        remove(clone)


# --- reporting -------------------------------------------------------------------------------


def short(node: str, most: int = 40) -> str:
    """A node id with a long parameter id cut (the JSON keeps it whole)."""
    name, bracket, param = node.partition("[")
    if not bracket or len(param) <= most:
        return node
    return f"{name}[{param[:most].replace(chr(92) + 'n', ' ')}...]"


def table(results: Sequence[Result]) -> str:
    rows = ["| mutation | file | result | killed by |", "|---|---|---|---|"]
    for r in results:
        by = f"`{short(r.test)}` ({r.stage} tests)" if r.status == "killed" and r.test else ""
        rows.append(f"| {r.name} | {r.file or ''} | {r.status} | {by} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO,
                        help="the repository under test (its HEAD commit), default this one")
    parser.add_argument("--scratch", type=Path, default=Path("/srv/lean-eval-mutants"),
                        help="where the scratch clones go (outside Lake's masks)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="measure only this mutation (repeatable)")
    parser.add_argument("--first-only", action="store_true",
                        help="run only each mutation's first tests, not the whole suite")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the results here")
    parser.add_argument("--list", action="store_true",
                        help="only say where each snippet is found (no tests are run)")
    args = parser.parse_args()
    known = {m.name for m in MUTATIONS}
    if unknown := sorted(set(args.only) - known):
        parser.error(f"unknown mutation(s): {', '.join(unknown)}")
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    repo = args.repo.resolve()
    commit = git("rev-parse", "HEAD", cwd=repo)
    scratch = args.scratch.absolute()
    if args.list:
        clone = scratch / "list"
        clone_at(repo, commit, clone)
        try:
            for m in chosen:
                sites = find_sites(clone, m)
                print(f"{m.name}: found {len(sites)} time(s)")
                for site in sites:
                    print(diff(site, clone))
        finally:
            remove(clone)
            with contextlib.suppress(OSError):
                scratch.rmdir()
        return
    load_start = os.getloadavg()
    started = time.monotonic()
    print(f"repo {repo} at {commit[:12]}; {len(chosen)} mutation(s); load average "
          f"{load_start[0]:.1f}", flush=True)
    results = []
    for m in chosen:
        r = measure(m, repo, commit, scratch, args.first_only)
        results.append(r)
        print(f"{r.name}: {r.status}{f' by {r.test}' if r.test else ''} ({r.seconds:.0f}s)",
              flush=True)
    elapsed = time.monotonic() - started
    load_end = os.getloadavg()
    print()
    print(table(results))
    killed = sum(r.status == "killed" for r in results)
    print(f"\nkilled {killed} of {len(results)}; {elapsed / 60:.1f} min; load average "
          f"{load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end")
    if args.json:
        args.json.write_text(json.dumps({
            "repo": str(repo), "commit": commit,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "first_only": args.first_only, "seconds": round(elapsed, 1),
            "load_average": {"start": load_start, "end": load_end},
            "killed": killed, "results": [r._asdict() for r in results],
        }, indent=2) + "\n", encoding="utf-8")
    with contextlib.suppress(OSError):
        scratch.rmdir()  # only when empty


if __name__ == "__main__":
    main()
