#!/usr/bin/env python3
"""Audit GitHub Actions workflows for mutable selectors (SPEC §2; the CI pin audit).

A CI run is only reproducible, and only as trustworthy as what it executes, when every thing it
fetches is named immutably. This script reads workflow YAML line by line (standard library only,
no YAML package) and reports every selector that can move under us.

Usage:
    python scripts/action_pin_audit.py [--root DIR] [PATH ...]

Without PATH it audits ``.github/workflows/*.yml|*.yaml`` (and composite actions under
``.github/actions/``) of the repository holding this script. A PATH may be a file or a directory
(its ``*.yml``/``*.yaml`` files). ``--root`` is the checkout whose ``lean-toolchain`` and
``*-version-file`` files the workflows read (default: the directory holding ``.github`` when the
file lies under one, else this repository).

Output: one line per finding, ``path:line: kind: text``, on stdout, then exit 1; otherwise one
``OK`` line and exit 0. Exit 2 on a usage error, a missing or unreadable file, or nothing to audit.

Finding kinds:
- ``action-tag`` / ``action-branch`` / ``action-short-sha`` / ``action-no-ref``: a ``uses:``
  action not pinned to a full 40-hex commit SHA (``@v4``, ``@main``, ``@11bd719``, no ``@``).
- ``reusable-workflow-tag`` / ``-branch`` / ``-short-sha`` / ``-no-ref``: the same for a reusable
  workflow ``owner/repo/.github/workflows/x.yml@ref``.
- ``docker-unpinned``: a ``docker://`` action, ``container:`` or service ``image:`` without an
  ``@sha256:`` digest.
- ``language-version``: a ``*-version`` / ``*_VERSION`` / ``toolchain:`` value that is not an
  exact ``X.Y.Z`` (``3.x``, ``3.11``, ``latest``, ``>=3.10``, ``lts/*``, ``stable``), a
  ``version:`` input that names a channel (``latest``, ``stable``, ...), an unverifiable
  ``*-version-file``, or ``rustup`` selecting a channel.
- ``runner-latest``: an unversioned runner image (``ubuntu-latest``, ``windows-latest``,
  ``macos-latest``): the image behind the label changes without notice, so CI changes too; use
  a versioned label such as ``ubuntu-24.04``.
- ``go-install``: ``go install|get|run pkg@ref`` where ref is not an exact module version or a
  40-hex commit (``@latest``, ``@master``, a branch, a short hash).
- ``pip-vcs``: ``pip install`` of a VCS URL (``git+https://...``) not pinned to a 40-hex commit.
- ``mutable-url``: ``curl``/``wget``/``pip`` fetching a URL naming a branch or channel
  (``/master/``, ``/main/``, ``releases/latest``, ``setup_lts.x``, a non-SHA ref of
  raw.githubusercontent.com), or a download piped straight into a shell from a URL that names no
  version or commit.
- ``elan-toolchain``: ``elan toolchain install``, ``elan default``, ``elan override set``,
  ``elan run`` or ``elan-init --default-toolchain`` not naming an exact
  ``leanprover/lean4:vX.Y.Z`` (``$(cat lean-toolchain)`` is read and checked), ``elan-init``
  without ``--default-toolchain`` (it would install ``stable``), and ``elan self update``.

Not audited (documented limits): whether a 40-hex SHA belongs to the named repository (an
impostor commit from a fork); packages installed by ``apt-get``/``pip`` from their registries;
``git clone`` of a default branch; expressions ``${{ ... }}`` (the values they read, such as
matrix entries and ``env:`` variables, are audited where they are defined).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

REPO_ROOT = Path(__file__).resolve().parent.parent

# Every kind of finding this audit reports (the module docstring says what each means).
KINDS = (
    "action-tag", "action-branch", "action-short-sha", "action-no-ref",
    "reusable-workflow-tag", "reusable-workflow-branch", "reusable-workflow-short-sha",
    "reusable-workflow-no-ref", "docker-unpinned", "language-version", "runner-latest",
    "go-install", "pip-vcs", "mutable-url", "elan-toolchain",
)

SHA40 = re.compile(r"[0-9a-fA-F]{40}")
SHORT_SHA = re.compile(r"[0-9a-fA-F]{4,39}")
TAG_LIKE = re.compile(r"v?\d+(?:\.\d+)*(?:[-+][0-9A-Za-z.+-]*)?")
EXACT_VERSION = re.compile(
    r"v?\d+\.\d+\.\d+t?(?:-[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?(?:\+[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?"
)
GO_VERSION = re.compile(r"v\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+incompatible)?")
NIGHTLY = re.compile(r"nightly-\d{4}-\d{2}-\d{2}")
LEAN_TOOLCHAIN = re.compile(r"leanprover/lean4:v\d+\.\d+\.\d+(?:-rc\d+)?")
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}")
RUNNER_LATEST = re.compile(r"(?<![\w.-])(?:ubuntu|windows|macos)-latest(?:-[a-z0-9-]+)?(?![\w.])",
                           re.IGNORECASE)
KEY_LINE = re.compile(
    r"""(?P<key>"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[A-Za-z0-9_$][A-Za-z0-9_.$/-]*)"""
    r"""[ \t]*:(?:[ \t]+(?P<value>.*))?$"""
)
BLOCK_HEADER = re.compile(r"[|>](?:[1-9]?[+-]?|[+-]?[1-9]?)")
REUSABLE = re.compile(r"/\.github/workflows/[^/]+\.ya?ml$")
EXPRESSION = "${{"

# Keys naming the version of a language or tool: `<prefix>-version` / `<PREFIX>_VERSION`.
VERSION_PREFIXES = (
    "python|node|go|golang|java|jdk|dotnet|ruby|rust|deno|bun|elixir|otp|erlang|rebar3|gleam|php"
    "|perl|r|julia|lua|luarocks|zig|swift|scala|sbt|gradle|maven|kotlin|dart|flutter|ghc|cabal"
    "|stack|ocaml|opam|lean|elan|lake|pnpm|yarn|npm|poetry|uv|pip|pipenv|conda|miniconda"
    "|terraform|kubectl|helm|protoc|cmake|ninja|meson|clang|llvm|gcc|nim|crystal|racket|coq"
    "|rocq|agda|idris|bwrap|bubblewrap|mypy|ruff|pytest"
)
VERSION_KEY = re.compile(rf"(?:{VERSION_PREFIXES})[-_]version", re.IGNORECASE)
VERSION_FILE_KEY = re.compile(rf"(?:{VERSION_PREFIXES})[-_]version[-_]file", re.IGNORECASE)
CHANNEL_WORDS = frozenset({"latest", "stable", "nightly", "beta", "lts", "lts/*", "current",
                           "node", "head", "main", "master", "edge", "canary", "*", "x",
                           "oldstable", "oldstable-lts", "newest", "release"})
# Keys whose values are prose or conditions, never a runner or image selection.
PROSE_KEYS = frozenset({"name", "run-name", "description", "if", "title", "message", "body",
                        "summary", "run", "script"})

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "python", "python3", "perl", "ruby",
                    "node", "pwsh", "powershell"})
FETCHERS = frozenset({"curl", "wget", "aria2c", "iwr", "invoke-webrequest", "invoke-restmethod"})
MUTABLE_SEGMENTS = frozenset({"master", "main", "head", "latest", "nightly", "trunk", "develop",
                              "edge", "canary", "stable"})
WRAPPERS = frozenset({"sudo", "env", "exec", "time", "nohup", "command", "builtin", "xargs"})
URL = re.compile(r"""https?://[^\s'"<>|;()`]+""")
TOOLCHAIN_READ = re.compile(
    r""""?(?:\$\(\s*(?:cat\s+|<\s*)|`\s*cat\s+)["']?"""
    r"""(?P<path>(?:\$\{\{\s*github\.workspace\s*\}\}/|\$\{?GITHUB_WORKSPACE\}?/|\./)?"""
    r"""[\w./-]*lean-toolchain)["']?\s*[)`]"?"""
)
PLACEHOLDER = re.compile(r"@@LEAN_TOOLCHAIN_(\d+)@@")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


class UsageError(Exception):
    """A bad argument or an unreadable file: exit 2."""


@dataclass(frozen=True)
class Finding:
    """One mutable selector at one line."""

    path: str
    line: int
    kind: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.text}"


@dataclass
class Node:
    """A key (or list-item scalar owner) on the indentation stack."""

    indent: int
    key: str


@dataclass
class Audit:
    """The findings of one workflow file."""

    display: str
    root: Path
    findings: list[Finding] = field(default_factory=list)
    uses_count: int = 0

    def add(self, line: int, kind: str, text: str) -> None:
        self.findings.append(Finding(self.display, line, kind, text))


# --------------------------------------------------------------------------- YAML, line-wise


def strip_comment(line: str) -> str:
    """``line`` without a trailing YAML/shell comment (``#`` at a word start, outside quotes)."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'" and (index == 0 or line[index - 1] in " \t:[{,=(-"):
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index].rstrip()
    return line.rstrip()


def unquote(value: str) -> str:
    """A YAML scalar's text without its quotes, anchor or tag."""
    value = value.strip()
    while value[:1] in ("&", "!") and " " in value:
        value = value.split(None, 1)[1]
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _unquoted(text: str) -> Iterator[tuple[int, str, int]]:
    """(index, character, bracket depth before it) for each character outside quotes."""
    depth, quote = 0, ""
    for index, char in enumerate(text):
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        else:
            yield index, char, depth
            depth += (char in "[{") - (char in "]}")


def split_top(text: str, sep: str = ",") -> list[tuple[int, str]]:
    """Split a flow collection's inside at top-level ``sep``: (offset, piece) pairs."""
    pieces: list[tuple[int, str]] = []
    start = 0
    for index, char, depth in _unquoted(text):
        if char == sep and depth == 0:
            pieces.append((start, text[start:index]))
            start = index + 1
    pieces.append((start, text[start:]))
    return [(offset + len(piece) - len(piece.lstrip()), piece.strip())
            for offset, piece in pieces if piece.strip()]


def balanced(text: str) -> bool:
    depth = 0
    for _, char, _ in _unquoted(text):
        depth += (char in "[{") - (char in "]}")
    return depth <= 0


@dataclass(frozen=True)
class FlowItem:
    """A scalar inside a flow collection: its line, the keys above it from the collection's own
    key down, and its key (a sequence entry's key is the key owning the sequence)."""

    line: int
    parents: tuple[str, ...]
    key: str
    value: str


def chars_items(chars: list[tuple[int, str]], owner: str) -> list[FlowItem]:
    """The scalars of the flow collection spelled by ``chars`` ((line, character) pairs), the
    value of the key ``owner``."""
    items: list[FlowItem] = []
    text = "".join(c for _, c in chars)
    lines = [n for n, _ in chars]

    def walk(start: int, stop: int, parents: tuple[str, ...]) -> None:
        """The collection text[start:stop] (brackets included), owned by ``parents``."""
        mapping = text[start] == "{"
        for offset, piece in split_top(text[start + 1:stop - 1]):
            at = start + 1 + offset
            if mapping:
                key, colon, value = piece.partition(":")
                if not colon:
                    continue
                value_at = at + len(key) + 1 + (len(value) - len(value.lstrip()))
                value = value.strip()
                name = unquote(key)
                if value[:1] in ("[", "{"):
                    walk(value_at, value_at + len(value), (*parents, name))
                else:
                    items.append(FlowItem(lines[min(at, len(lines) - 1)], parents, name, value))
            elif piece[:1] in ("[", "{"):
                walk(at, at + len(piece), parents)
            elif parents:
                items.append(FlowItem(lines[min(at, len(lines) - 1)], parents[:-1], parents[-1],
                                      piece))

    body = text.strip()
    lead = len(text) - len(text.lstrip())
    if len(body) >= 2 and body[0] in "[{" and body[-1] in "]}":
        walk(lead, lead + len(body), (owner,))
    return items


class Parser:
    """Walks one workflow file and hands every scalar to the checks with its key and line."""

    def __init__(self, audit: Audit, lines: Sequence[str]) -> None:
        self.audit = audit
        self.lines = lines
        self.stack: list[Node] = []

    def parents(self) -> list[str]:
        return [node.key for node in self.stack]

    def run(self) -> None:
        index = 0
        while index < len(self.lines):
            index = self.line(index)

    def line(self, index: int) -> int:
        """Handle the structural line at ``index``; return the next line to read."""
        text = strip_comment(self.lines[index])
        if not text.strip() or text.lstrip().startswith("%"):
            return index + 1
        if text.strip() in ("---", "..."):
            self.stack.clear()
            return index + 1
        col = indent_of(text)
        body = text.strip()
        is_item = False
        dash_col = col
        while body == "-" or body.startswith("- "):
            is_item = True
            dash_col = col
            stripped = body[1:].lstrip(" ")
            col += len(body) - len(stripped)
            body = stripped
        if not body:
            return index + 1
        match = KEY_LINE.match(body)
        if match is None:
            if is_item:
                # A sequence's items sit deeper than its key, or at the key's own column.
                self.stack = [n for n in self.stack if n.indent <= dash_col]
                return self.scalar_item(index, body)
            return index + 1
        key = unquote(match.group("key"))
        value = (match.group("value") or "").strip()
        self.stack = [n for n in self.stack if n.indent < col]
        parents = self.parents()
        self.stack.append(Node(col, key))
        return self.keyed(index, key, value, col, indent_of(text), parents)

    def keyed(self, index: int, key: str, value: str, col: int, line_indent: int,
              parents: list[str]) -> int:
        lineno = index + 1
        bare = unquote(value) if value else ""
        if value and BLOCK_HEADER.fullmatch(value.split("#", maxsplit=1)[0].strip()):
            content, end = self.block(index, line_indent)
            self.block_scalar(key, content, parents)
            return end
        if value[:1] in ("[", "{"):
            items, end = self.flow(index, value, key)
            self.flow_value(items, parents)
            return end
        if not value:
            return index + 1
        end = index + 1
        pieces = [(lineno, bare)]
        while end < len(self.lines):
            nxt = self.lines[end]
            if nxt.strip() and indent_of(nxt) <= col:
                break
            if nxt.strip():
                pieces.append((end + 1, strip_comment(nxt).strip()))
            end += 1
        if key in ("run", "script"):
            if key == "run":
                check_shell(self.audit, pieces)
            return end
        check_scalar(self.audit, key, bare, lineno, parents)
        return end

    def scalar_item(self, index: int, body: str) -> int:
        owner = self.stack[-1].key if self.stack else ""
        parents = self.parents()[:-1]
        if body[:1] in ("[", "{"):
            items, end = self.flow(index, body, owner)
            self.flow_value(items, parents)
            return end
        check_scalar(self.audit, owner, unquote(body), index + 1, parents)
        return index + 1

    def block(self, index: int, line_indent: int) -> tuple[list[tuple[int, str]], int]:
        """The lines of a ``|``/``>`` block scalar starting after ``index``; and where it ends."""
        content: list[tuple[int, str]] = []
        end = index + 1
        content_indent = -1
        while end < len(self.lines):
            raw = self.lines[end]
            if raw.strip():
                here = indent_of(raw)
                if content_indent < 0:
                    if here <= line_indent:
                        break
                    content_indent = here
                elif here < content_indent:
                    break
                content.append((end + 1, raw[content_indent:]))
            else:
                content.append((end + 1, ""))
            end += 1
        return content, end

    def flow(self, index: int, value: str, owner: str) -> tuple[list[FlowItem], int]:
        """A flow collection from ``value`` on, across lines, flattened to its scalars."""
        chars: list[tuple[int, str]] = [(index + 1, c) for c in value]
        end = index + 1
        while not balanced("".join(c for _, c in chars)) and end < len(self.lines):
            chars += [(end + 1, c) for c in " " + strip_comment(self.lines[end]).strip()]
            end += 1
        return chars_items(chars, owner), end

    def flow_value(self, items: list[FlowItem], parents: list[str]) -> None:
        for item in items:
            if item.key == "run":
                check_shell(self.audit, [(item.line, unquote(item.value))])
            else:
                check_scalar(self.audit, item.key, unquote(item.value), item.line,
                             [*parents, *item.parents])

    def block_scalar(self, key: str, content: list[tuple[int, str]], parents: list[str]) -> None:
        if key == "run":
            check_shell(self.audit, content)
        elif key not in PROSE_KEYS:
            for lineno, text in content:
                if text.strip():
                    check_scalar(self.audit, key, text.strip(), lineno, parents)


# --------------------------------------------------------------------------- YAML value checks


def check_scalar(audit: Audit, key: str, value: str, lineno: int, parents: list[str]) -> None:
    """Every check that applies to the scalar ``value`` of ``key``."""
    if not value or re.fullmatch(r"\*[A-Za-z0-9_.-]+", value):
        return  # empty, or an alias: the anchored value is checked where it is defined
    if key == "uses":
        audit.uses_count += 1
        check_uses(audit, value, lineno)
        return
    if key == "container" or (key == "image" and parents[-1:] == ["container"]):
        check_image(audit, value, lineno, "job container")
    elif key == "image" and len(parents) >= 2 and parents[-2] == "services":
        check_image(audit, value, lineno, f"service `{parents[-1]}` image")
    if key not in PROSE_KEYS:
        for match in RUNNER_LATEST.finditer(value):
            audit.add(lineno, "runner-latest",
                      f"`{match.group(0)}` is an unversioned runner image; name a versioned "
                      "one (e.g. ubuntu-24.04)")
    if VERSION_FILE_KEY.fullmatch(key):
        check_version_file(audit, key, value, lineno)
    elif VERSION_KEY.fullmatch(key) or key == "toolchain":
        check_version(audit, key, value, lineno)
    elif key == "default" and parents and VERSION_KEY.fullmatch(parents[-1]):
        check_version(audit, f"{parents[-1]}: default", value, lineno)  # a workflow input
    elif key == "version" and "with" in parents[-1:] and (
            value.lower() in CHANNEL_WORDS or re.search(r"[*^~<>|]|\.x\b|\bx\.", value)):
        audit.add(lineno, "language-version", f"`{key}: {value}` names a channel or a range, "
                  "not an exact X.Y.Z")


def check_uses(audit: Audit, value: str, lineno: int) -> None:
    if value.startswith(("./", ".\\")):
        return
    if value.startswith("docker://"):
        check_image(audit, value[len("docker://"):], lineno, "docker action")
        return
    name, at, ref = value.partition("@")
    target = "reusable-workflow" if REUSABLE.search(name) else "action"
    what = "reusable workflow" if target == "reusable-workflow" else "action"
    if not at:
        audit.add(lineno, f"{target}-no-ref",
                  f"{what} `{value}` names no ref; pin it to a full 40-hex commit SHA")
    elif SHA40.fullmatch(ref):
        return
    elif SHORT_SHA.fullmatch(ref) and re.search(r"\d", ref):
        audit.add(lineno, f"{target}-short-sha",
                  f"{what} `{value}` uses an abbreviated SHA; pin the full 40-hex commit SHA")
    elif TAG_LIKE.fullmatch(ref):
        audit.add(lineno, f"{target}-tag",
                  f"{what} `{value}` is pinned to tag `{ref}`, which can be moved; "
                  "pin the full 40-hex commit SHA")
    else:
        audit.add(lineno, f"{target}-branch",
                  f"{what} `{value}` follows the branch or name `{ref}`; "
                  "pin the full 40-hex commit SHA")


def check_image(audit: Audit, image: str, lineno: int, where: str) -> None:
    if EXPRESSION in image or DIGEST.search(image):
        return
    audit.add(lineno, "docker-unpinned",
              f"{where} `{image}` has no @sha256: digest; tags move")


def exact_version(value: str) -> bool:
    value = value.strip()
    if value.startswith(EXPRESSION):
        return True
    return bool(EXACT_VERSION.fullmatch(value)) and not re.search(r"(?i)(?:^|[.-])[x*](?:$|[.-])",
                                                                  value)


def check_version(audit: Audit, key: str, value: str, lineno: int) -> None:
    if key == "toolchain" and (LEAN_TOOLCHAIN.fullmatch(value) or NIGHTLY.fullmatch(value)):
        return
    if re.fullmatch(r"\$\{\{[^}]*\}\}", value):
        return  # the expression's source (matrix entry, env variable, input) is audited there
    for part in (p for p in re.split(r"[\s,]+", value) if p):
        if not exact_version(part):
            audit.add(lineno, "language-version",
                      f"`{key}: {value}` is not an exact X.Y.Z version")
            return


def check_version_file(audit: Audit, key: str, value: str, lineno: int) -> None:
    if value.startswith(EXPRESSION):
        return
    path = audit.root / value
    try:
        content = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        audit.add(lineno, "language-version",
                  f"`{key}: {value}`: {path} cannot be read, so its version cannot be checked")
        return
    words = [w for line in content.splitlines() for w in line.split("#")[0].split()]
    if not words or not all(exact_version(w) for w in words):
        audit.add(lineno, "language-version",
                  f"`{key}: {value}` holds `{' '.join(words)}`, not an exact X.Y.Z version")


# --------------------------------------------------------------------------- run: blocks


def shell_lines(pieces: list[tuple[int, str]]) -> Iterator[tuple[str, list[tuple[int, int]]]]:
    """Logical shell lines of a ``run:`` value: comments and heredoc bodies dropped, backslash
    continuations joined. Each comes with (offset, line number) marks."""
    text, marks = "", []
    heredoc: str | None = None
    for lineno, raw in pieces:
        if heredoc is not None:
            if raw.strip() == heredoc:
                heredoc = None
            continue
        line = strip_comment(raw)
        found = HEREDOC.search(line)
        if found:
            heredoc = found.group(2)
        marks.append((len(text), lineno))
        if line.endswith("\\"):
            text += line[:-1] + " "
            continue
        text += line
        if text.strip():
            yield text, marks
        text, marks = "", []
    if text.strip():
        yield text, marks


def line_at(marks: list[tuple[int, int]], offset: int) -> int:
    lineno = marks[0][1]
    for start, number in marks:
        if start <= offset:
            lineno = number
    return lineno


def substitute_toolchain_reads(text: str, reads: list[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        reads.append(match.group("path"))
        return f"@@LEAN_TOOLCHAIN_{len(reads) - 1}@@"

    return TOOLCHAIN_READ.sub(replace, text)


def words(command: str) -> list[str]:
    try:
        return shlex.split(command, posix=True)
    except ValueError:
        return [w.strip("\"'") for w in command.split()]


def command_name(argv: list[str]) -> tuple[str, list[str]]:
    """The program of a simple command (past VAR=value, sudo, env, ...) and its arguments."""
    index = 0
    while index < len(argv) and (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[index])
                                 or argv[index] in WRAPPERS
                                 or (index > 0 and argv[index - 1] in WRAPPERS
                                     and argv[index].startswith("-"))):
        index += 1
    if index >= len(argv):
        return "", []
    return argv[index].rsplit("/", 1)[-1].lower(), argv[index + 1:]


def pipelines(text: str) -> list[list[str]]:
    """Pipelines of ``text`` (split at ``&&``, ``||``, ``;``, newlines), each a list of commands."""
    result: list[list[str]] = []
    for chain in re.split(r"&&|\|\||;|\n", text):
        parts = [p.strip() for p in re.split(r"(?<![|>])\|(?![|&])", chain) if p.strip()]
        if parts:
            result.append(parts)
    return result


def check_shell(audit: Audit, pieces: list[tuple[int, str]]) -> None:
    for text, marks in shell_lines(pieces):
        reads: list[str] = []
        subst = substitute_toolchain_reads(text, reads)
        for pipeline in pipelines(subst):
            check_pipeline(audit, pipeline, marks, text, reads)


def locate(marks: list[tuple[int, int]], text: str, needle: str) -> int:
    at = text.find(needle)
    return line_at(marks, max(at, 0))


def check_pipeline(audit: Audit, pipeline: list[str], marks: list[tuple[int, int]], text: str,
                   reads: list[str]) -> None:
    commands = [command_name(words(part)) for part in pipeline]
    piped_to_shell = any(name in SHELLS for name, _ in commands[1:])
    for position, (name, args) in enumerate(commands):
        raw = pipeline[position]
        if name in FETCHERS:
            check_urls(audit, raw, marks, text, piped=piped_to_shell and position == 0)
        elif name in ("pip", "pip3", "pipx", "uv") or re.fullmatch(r"pip3\.\d+", name) or (
                name.startswith("python") and args[:2] == ["-m", "pip"]):
            check_pip(audit, args, marks, text)
        elif name == "go":
            check_go(audit, args, marks, text)
        elif name == "elan":
            check_elan(audit, args, marks, text, reads)
        elif name == "rustup":
            check_rustup(audit, args, marks, text)
        if name in ("elan-init", "elan-init.sh") or (
                name in SHELLS and any(a.rsplit("/", 1)[-1].startswith("elan-init")
                                       for a in args[:1])) or (
                name in SHELLS and position > 0
                and any("elan-init" in p for p in pipeline[:position])):
            check_elan_init(audit, args, marks, text, reads)


def mutable_url(url: str) -> str | None:
    """Why ``url`` names something that moves, or None."""
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    host = parts.netloc.lower()
    if "refs/heads/" in parts.path:
        return "a branch (refs/heads/)"
    ref: str | None = None
    if host == "raw.githubusercontent.com" and len(segments) >= 3:
        ref = segments[2]
    elif host == "github.com" and len(segments) >= 4 and segments[2] in (
            "raw", "blob", "archive", "tarball", "zipball"):
        ref = re.sub(r"\.(?:tar\.gz|tgz|zip)$", "", segments[3])
    if ref is not None and not SHA40.fullmatch(ref) and not TAG_LIKE.fullmatch(ref) \
            and ref != "refs":
        return f"the branch `{ref}`"
    for segment in segments:
        stem = re.sub(r"\.(?:sh|tar\.gz|tgz|zip|py|ps1)$", "", segment.lower())
        if stem in MUTABLE_SEGMENTS:
            return f"the moving name `{segment}`"
        if re.search(r"(?:^|[_-])(?:lts|latest)(?:[._-]|$)|[_-]\d+\.x$", stem):
            return f"the moving name `{segment}`"
    return None


def names_a_version(url: str) -> bool:
    path = urlsplit(url).path
    return any(SHA40.fullmatch(s) or (TAG_LIKE.fullmatch(s) and "." in s)
               or re.search(r"\d+\.\d+\.\d+", s) for s in path.split("/") if s)


def check_urls(audit: Audit, command: str, marks: list[tuple[int, int]], text: str,
               *, piped: bool) -> None:
    for url in URL.findall(command):
        why = mutable_url(url)
        lineno = locate(marks, text, url)
        if why is not None:
            audit.add(lineno, "mutable-url",
                      f"`{url}` names {why}{' and is piped to a shell' if piped else ''}; "
                      "fetch a tag or commit and check its sha256")
        elif piped and not names_a_version(url):
            audit.add(lineno, "mutable-url",
                      f"`{url}` names no version or commit and is piped to a shell")


def check_pip(audit: Audit, args: list[str], marks: list[tuple[int, int]], text: str) -> None:
    if "install" not in args[:3]:
        return
    for arg in args:
        vcs = re.search(r"(?:git|hg|svn|bzr)\+[^\s'\"]+", arg)
        if vcs is None:
            if arg.startswith(("http://", "https://")):
                why = mutable_url(arg)
                if why is not None:
                    audit.add(locate(marks, text, arg), "mutable-url",
                              f"pip installs `{arg}`, which names {why}")
            continue
        url = vcs.group(0)
        path = urlsplit(url.split("+", 1)[1]).path
        ref = path.rsplit("@", 1)[1] if "@" in path else ""
        if not SHA40.fullmatch(ref):
            selector = f"`@{ref}`" if ref else "no ref (the default branch)"
            audit.add(locate(marks, text, url), "pip-vcs",
                      f"pip installs `{url}` at {selector}; pin a full 40-hex commit")


def check_go(audit: Audit, args: list[str], marks: list[tuple[int, int]], text: str) -> None:
    if not args or args[0] not in ("install", "get", "run"):
        return
    packages = [a for a in args[1:] if not a.startswith("-")]
    if args[0] == "run":
        packages = packages[:1]
    for package in packages:
        if "@" not in package:
            continue
        version = package.rsplit("@", 1)[1]
        if not (GO_VERSION.fullmatch(version) or SHA40.fullmatch(version)):
            audit.add(locate(marks, text, package), "go-install",
                      f"`go {args[0]} {package}` selects `@{version}`, which moves; "
                      "name an exact module version vX.Y.Z")


def toolchain_problem(token: str, audit: Audit, reads: list[str]) -> str | None:
    """Why the elan toolchain ``token`` is not exact, or None."""
    read = PLACEHOLDER.fullmatch(token)
    if read is not None:
        rel = re.sub(r"^(?:\$\{\{\s*github\.workspace\s*\}\}|\$\{?GITHUB_WORKSPACE\}?|\.)/", "",
                     reads[int(read.group(1))])
        path = audit.root / rel
        try:
            content = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return f"reads {path}, which cannot be read"
        if LEAN_TOOLCHAIN.fullmatch(content):
            return None
        return f"reads {rel}, which holds `{content}`, not an exact release"
    if LEAN_TOOLCHAIN.fullmatch(token):
        return None
    if "$" in token or "@@" in token:
        return "cannot be checked (a variable)"
    return "is not an exact release"


def report_toolchain(audit: Audit, token: str, what: str, marks: list[tuple[int, int]],
                     text: str, reads: list[str]) -> None:
    problem = toolchain_problem(token, audit, reads)
    if problem is None:
        return
    shown = PLACEHOLDER.sub(lambda m: f"$(cat {reads[int(m.group(1))]})", token)
    needle = shown if shown in text else "elan"
    audit.add(locate(marks, text, needle), "elan-toolchain",
              f"{what} `{shown}` {problem}; name leanprover/lean4:vX.Y.Z or read "
              "lean-toolchain")


def check_elan(audit: Audit, args: list[str], marks: list[tuple[int, int]], text: str,
               reads: list[str]) -> None:
    operands = [a for a in args if not a.startswith("-")]
    if operands[:2] == ["self", "update"]:
        audit.add(locate(marks, text, "self update"), "elan-toolchain",
                  "`elan self update` replaces elan with whatever release is newest")
        return
    if operands[:2] in (["toolchain", "install"], ["toolchain", "add"]):
        chosen, what = operands[2:], "elan toolchain install"
    elif operands[:1] in (["default"], ["run"]):
        chosen, what = operands[1:2], f"elan {operands[0]}"
    elif operands[:2] == ["override", "set"]:
        chosen, what = operands[2:3], "elan override set"
    else:
        return
    for selected in chosen:
        if selected != "none":
            report_toolchain(audit, selected, what, marks, text, reads)


def check_elan_init(audit: Audit, args: list[str], marks: list[tuple[int, int]], text: str,
                    reads: list[str]) -> None:
    for index, arg in enumerate(args):
        if arg.startswith("--default-toolchain="):
            value = arg.split("=", 1)[1]
        elif arg == "--default-toolchain" and index + 1 < len(args):
            value = args[index + 1]
        else:
            continue
        if value != "none":
            report_toolchain(audit, value, "elan-init --default-toolchain", marks, text, reads)
        return
    audit.add(locate(marks, text, "elan-init"), "elan-toolchain",
              "elan-init without --default-toolchain installs the moving `stable` channel; "
              "pass --default-toolchain none and install lean-toolchain's release")


def check_rustup(audit: Audit, args: list[str], marks: list[tuple[int, int]], text: str) -> None:
    operands = [a for a in args if not a.startswith("-")]
    if operands[:2] in (["toolchain", "install"], ["override", "set"]):
        chosen = operands[2:]
    elif operands[:1] in (["default"], ["install"]):
        chosen = operands[1:]
    else:
        return
    for selected in chosen:
        if not (EXACT_VERSION.fullmatch(selected) or NIGHTLY.fullmatch(selected)):
            audit.add(locate(marks, text, selected), "language-version",
                      f"`rustup {' '.join(operands[:2])}` selects `{selected}`, which moves; "
                      "name an exact X.Y.Z")


# --------------------------------------------------------------------------- files and CLI


def root_for(path: Path, explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit
    resolved = path.resolve()
    for parent in resolved.parents:
        if parent.name == ".github":
            return parent.parent
    return REPO_ROOT


def audit_file(path: Path, display: str, root: Path) -> Audit:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{display}: not UTF-8 ({exc.reason})") from exc
    except OSError as exc:
        raise UsageError(f"{display}: cannot read: {exc.strerror or exc}") from exc
    audit = Audit(display=display, root=root)
    Parser(audit, text.replace("\t", "    ").splitlines()).run()
    return audit


def default_files() -> list[tuple[Path, str]]:
    found: list[Path] = []
    workflows = REPO_ROOT / ".github" / "workflows"
    if workflows.is_dir():
        found += [p for p in workflows.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file()]
    actions = REPO_ROOT / ".github" / "actions"
    if actions.is_dir():
        found += [p for p in actions.rglob("action.y*ml") if p.suffix in (".yml", ".yaml")]
    if not found:
        raise UsageError(f"no workflow files under {workflows}; nothing to audit")
    return [(p, p.relative_to(REPO_ROOT).as_posix()) for p in sorted(found)]


def explicit_files(paths: Sequence[str]) -> list[tuple[Path, str]]:
    files: list[tuple[Path, str]] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            inside = sorted(p for p in path.iterdir()
                            if p.suffix in (".yml", ".yaml") and p.is_file())
            if not inside:
                raise UsageError(f"{given}: no *.yml or *.yaml files in this directory")
            files += [(p, str(p)) for p in inside]
        elif path.is_file():
            files.append((path, given))
        else:
            raise UsageError(f"{given}: no such file or directory")
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="action_pin_audit.py",
        description="Report mutable selectors (action tags and branches, inexact language "
                    "versions, unpinned images, toolchains and downloads) in GitHub workflows.")
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="workflow files or directories (default: .github/workflows of "
                             "this repository)")
    parser.add_argument("--root", type=Path, default=None,
                        help="checkout whose lean-toolchain and version files workflows read")
    options = parser.parse_args(argv)
    try:
        if options.root is not None and not options.root.is_dir():
            raise UsageError(f"--root {options.root}: not a directory")
        files = explicit_files(options.paths) if options.paths else default_files()
        audits = [audit_file(path, display, root_for(path, options.root))
                  for path, display in files]
    except UsageError as exc:
        print(f"action_pin_audit: error: {exc}", file=sys.stderr)
        return 2
    findings = [f for audit in audits for f in audit.findings]
    for finding in findings:
        print(finding)
    uses = sum(audit.uses_count for audit in audits)
    if findings:
        print(f"action_pin_audit: {len(findings)} mutable selector(s) in {len(audits)} file(s)",
              file=sys.stderr)
        return 1
    print(f"action_pin_audit: OK: {len(audits)} file(s), {uses} uses: pinned to commit SHAs, "
          "no mutable selectors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
