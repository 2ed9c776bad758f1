"""Every ```console example of README.md, SECURITY.md, docs/ and examples/ prints what the
document shows (issue 32 item 2; the convention: tests/support/doc_examples.py).

Each document runs top to bottom in one bash, from a fresh git checkout of this repository's
files (two commits: the benchmark, then the rest, so that ``HEAD~1`` is an earlier benchmark
commit), with the stand-in toolchain and bubblewrap's floor given as every reader without Lean
gives them: ``LEAN_EVAL_TOOLCHAIN=$PWD/tests/standin/toolchain`` and
``LEAN_EVAL_ALLOW_BWRAP_VERSION=0.8.0``, which the documents say."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from support import doc_examples
from support.files import copy_benchmark
from support.places import REPO, STANDIN

from lean_eval.supervise import process

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

DOCUMENTS = [p for p in doc_examples.documents() if doc_examples.console_examples(p)]
# What the examples may run besides lean-eval and coreutils (docs/development.md says so).
TOOLS = ("bash", "git", "grep", "sed", "tar", "openssl")
MARK = "\x1e"  # a record separator around each command's start and end, never in an example
ENDED = re.compile(f"{MARK}end (\\d+) (\\d+){MARK}\n?")
STARTED = re.compile(f"{MARK}start (\\d+){MARK}\n")
GIT = {"GIT_AUTHOR_NAME": "lean-eval", "GIT_AUTHOR_EMAIL": "dev@lean-eval.invalid",
       "GIT_COMMITTER_NAME": "lean-eval", "GIT_COMMITTER_EMAIL": "dev@lean-eval.invalid",
       "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}


def _git(checkout: Path, env: dict[str, str], *args: str) -> None:
    done = process.run_capture(("git", *args), env=env, cwd=checkout, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")


def _checkout(base: Path) -> Path:
    """A git checkout of this repository's benchmark, examples and scripts, with the stand-in
    toolchain at tests/standin/toolchain, as a reader's clone has them."""
    checkout = base / "lean-eval"
    checkout.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(base), **GIT}
    copy_benchmark(checkout)
    _git(checkout, env, "init", "-q", "-b", "main")
    _git(checkout, env, "add", "-A")
    _git(checkout, env, "commit", "-q", "-m", "the benchmark")
    for name in ("examples", "scripts"):
        shutil.copytree(REPO / name, checkout / name,
                        ignore=shutil.ignore_patterns("__pycache__", "results", "out"))
    (checkout / "tests" / "standin").mkdir(parents=True)
    (checkout / "tests" / "standin" / "toolchain").symlink_to(STANDIN)
    _git(checkout, env, "add", "-A")
    _git(checkout, env, "commit", "-q", "-m", "examples and scripts")
    return checkout


def _script(examples: list[doc_examples.Example]) -> str:
    lines = ["exec 2>&1 </dev/null"]
    for index, example in enumerate(examples):
        lines += [f"printf '{MARK}start {index}{MARK}\\n'", example.command,
                  f"printf '{MARK}end {index} %d{MARK}\\n' \"$?\""]
    return "\n".join(lines) + "\n"


def _outputs(stdout: str, count: int) -> list[tuple[int | None, str]]:
    """(exit status, output) of each of ``count`` commands; (None, what came) for those that
    never ended."""
    found: list[tuple[int | None, str]] = []
    for index in range(count):
        start = STARTED.search(stdout)
        if start is None or int(start.group(1)) != index:
            found += [(None, "")] * (count - index)
            break
        rest = stdout[start.end():]
        end = ENDED.search(rest)
        if end is None:
            found += [(None, rest)] + [(None, "")] * (count - index - 1)
            break
        found.append((int(end.group(2)), rest[:end.start()]))
        stdout = rest[end.end():]
    return found


@pytest.mark.parametrize("document", DOCUMENTS,
                         ids=[str(p.relative_to(REPO)) for p in DOCUMENTS])
def test_every_console_example_prints_what_the_document_shows(document: Path, outside: Path,
                                                              tmp_path: Path) -> None:
    examples = doc_examples.console_examples(document)
    checkout = _checkout(outside)
    home = tmp_path / "home"  # under /tmp, which Lake masks, as a reader's /root or /home is
    home.mkdir()
    venv_bin = Path(sys.executable).parent
    assert (venv_bin / "lean-eval").exists(), f"no lean-eval beside {sys.executable}"
    path = f"{venv_bin}:/usr/local/bin:/usr/bin:/bin"
    missing = [tool for tool in TOOLS if shutil.which(tool, path=path) is None]
    assert not missing, f"the documents' examples use {', '.join(missing)}: install it"
    env = {"PATH": path, "HOME": str(home),
           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONPATH": str(REPO),
           "TMPDIR": os.environ.get("TMPDIR", tempfile.gettempdir()),
           "LEAN_EVAL_TOOLCHAIN": str(checkout / "tests" / "standin" / "toolchain"),
           "LEAN_EVAL_ALLOW_BWRAP_VERSION": "0.8.0"}
    done = process.run(("/bin/bash", "-c", _script(examples)), env=env, cwd=checkout,
                       timeout=1000, output_cap=8 * 1024 * 1024)
    stdout = done.stdout.decode(errors="replace")
    replacements = ((str(checkout), doc_examples.CHECKOUT), (str(home), doc_examples.HOME),
                    (str(STANDIN), doc_examples.CHECKOUT + "/tests/standin/toolchain"))
    where = str(document.relative_to(REPO))
    ran = _outputs(stdout, len(examples))
    problems = [problem for example, (status, raw) in zip(examples, ran, strict=True)
                if (problem := doc_examples.mismatch(where, example, status, raw, replacements))]
    assert not problems, "\n\n".join(problems)
