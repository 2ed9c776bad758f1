"""The documents' ```console examples: found, run and compared (docs/development.md,
"Examples that run").

A ```console block holds commands, each on a line starting with ``$ `` (a line ending with ``\\``
continues on the next), each followed by the output it prints: stdout and stderr as one stream,
as a terminal shows them. In the expected output a line ``...`` stands for any number of lines
and ``...`` within a line for any text. Both sides are normalized (``normalize``) before they are
compared, so digests, times and the checkout's path may differ. Each document runs top to
bottom in one bash, in a fresh copy of the repository (``tests/e2e/test_doc_examples.py``), and
every command must exit 0: a command that is meant to fail shows its status (``; echo $?``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import NamedTuple

from support.places import REPO

FENCE = re.compile(r"^(`{3,})(\S*)\s*$")
PROMPT = "$ "
ELLIPSIS = "..."
CHECKOUT = "/home/you/lean-eval"  # what a document calls the checkout it runs in
HOME = "/home/you"


def documents() -> list[Path]:
    """Every document whose examples the suite runs: README.md, SECURITY.md, docs/ and the
    READMEs of examples/."""
    found = [REPO / "README.md", REPO / "SECURITY.md", *sorted((REPO / "docs").rglob("*.md")),
             *sorted((REPO / "examples").rglob("README*"))]
    return [p for p in found if p.is_file()]


class Block(NamedTuple):
    """One fenced block: its info string, the line number of its first content line, its
    lines."""

    info: str
    line: int
    lines: tuple[str, ...]


class Example(NamedTuple):
    """One command of a ```console block and the output the document shows for it."""

    line: int  # of the ``$ `` line in the document
    command: str  # continuation lines joined as bash reads them
    expected: tuple[str, ...]


def blocks(text: str) -> Iterator[Block]:
    """The fenced blocks of a Markdown ``text``."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence, info = opening.groups()
        end = index + 1
        while end < len(lines) and lines[end].rstrip() != fence:
            end += 1
        yield Block(info, index + 2, tuple(lines[index + 1:end]))
        index = end + 1


def examples(block: Block) -> list[Example]:
    """The commands of one ```console block with the output shown after each."""
    found: list[Example] = []
    command: list[str] = []
    output: list[str] = []
    start = 0
    for offset, line in enumerate(block.lines):
        if command and command[-1].endswith("\\"):
            command.append(line)
            continue
        if line.startswith(PROMPT):
            if command:
                found.append(Example(start, "\n".join(command), tuple(output)))
            command, output, start = [line[len(PROMPT):]], [], block.line + offset
        elif command:
            output.append(line)
        else:
            raise ValueError(f"line {block.line + offset}: a console block starts with `$ `")
    if command:
        found.append(Example(start, "\n".join(command), tuple(output)))
    return found


def console_examples(path: Path) -> list[Example]:
    """Every command of every ```console block of ``path``, in document order."""
    text = path.read_text(encoding="utf-8")
    return [e for b in blocks(text) if b.info == "console" for e in examples(b)]


# What may differ between the run a document shows and the run the suite makes: (pattern,
# placeholder), applied in order to both sides.
NORMALIZE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b[0-9a-f]{64}\b"), "<sha256>"),
    (re.compile(r"\b[0-9a-f]{40}\b"), "<commit>"),
    (re.compile(r"\b[0-9a-f]{7,16}(?=\.\.\.)"), "<hex>"),  # an abbreviated digest: 040b61b0...
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"\b\d+(?:\.\d+)? ?(?:s|ms)\b"), "<t>"),
    # the harness's own version, as --version and the records print it
    (re.compile(r"(?<=lean-eval )\d+\.\d+\.\d+\S*|(?<=\"harness_version\": \")[^\"]+"),
     "<version>"),
)


def normalize(text: str, *, replacements: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """``text`` as lines, with each (literal, placeholder) of ``replacements`` substituted (the
    machine's paths), then ``NORMALIZE``, trailing spaces and trailing empty lines dropped."""
    for literal, placeholder in replacements:
        text = text.replace(literal, placeholder)
    for pattern, placeholder in NORMALIZE:
        text = pattern.sub(placeholder, text)
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


@cache
def _line_pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(part) for part in expected.split(ELLIPSIS)) + r"\Z")


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` is ``expected`` with every ``...`` line standing for any number of
    lines and every ``...`` within a line for any text."""
    memo: dict[tuple[int, int], bool] = {}

    def at(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(expected):
                memo[i, j] = j == len(actual)
            elif expected[i].strip() == ELLIPSIS:
                memo[i, j] = at(i + 1, j) or (j < len(actual) and at(i, j + 1))
            else:
                memo[i, j] = (j < len(actual) and _line_pattern(expected[i]).match(actual[j])
                              is not None and at(i + 1, j + 1))
        return memo[i, j]

    return at(0, 0)


def mismatch(where: str, example: Example, status: int | None, raw: str,
             replacements: tuple[tuple[str, str], ...]) -> str | None:
    """Why ``raw`` (what the command printed, exiting ``status``; None when it never ended) is not
    what the document shows, or None when it is."""
    expected = normalize("\n".join(example.expected))
    actual = normalize(raw, replacements=replacements)
    problems = []
    if status is None:
        problems.append("the command never finished (the document's shell stopped before it)")
    elif status != 0:
        problems.append(f"it exited {status}; a command meant to fail shows it (`; echo $?`)")
    if not matches(expected, actual):
        diff = "\n".join(difflib.unified_diff(expected, actual, "shown (normalized)",
                                              "printed (normalized)", lineterm=""))
        shown = raw
        for literal, placeholder in replacements:
            shown = shown.replace(literal, placeholder)
        problems.append("its output differs from what the document shows (a shown `...` line "
                        f"stands for any lines):\n{diff}\n"
                        f"--- what it printed (to paste if the product is right):\n{shown}")
    if not problems:
        return None
    command = example.command.replace("\n", "\n  ")
    return f"{where}:{example.line}: $ {command}\n" + "\n".join(problems)
