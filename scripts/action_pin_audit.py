#!/usr/bin/env python3
"""Audit GitHub Actions workflows for mutable selectors (docs/design.md §9).

A CI run is only reproducible, and only as trustworthy as what it executes, when every thing it
fetches is named immutably. zizmor (pinned: ``ZIZMOR_VERSION``) parses each file and reports
unpinned ``uses:`` refs and images; the rules zizmor lacks walk the YAML with PyYAML's node API
(each value keeps its line) and tokenise ``run:`` blocks. zizmor runs ``--offline``,
``--no-ignores`` (a ``# zizmor: ignore`` comment silences nothing), with
``action_pin_audit.zizmor.yml`` (hash-pin every ``uses:``, ``actions/*`` included) and the
``auditor`` persona (a digest on every tagged image).

Usage:
    python scripts/action_pin_audit.py [--root DIR] [PATH ...]

Without PATH it audits ``.github/workflows/*.yml|*.yaml`` (and composite actions under
``.github/actions/``) of the repository holding this script. A PATH may be a file or a directory
(its ``*.yml``/``*.yaml`` files). ``--root`` is the checkout whose ``lean-toolchain`` and
``*-version-file`` files the workflows read (default: the directory holding ``.github`` when the
file lies under one, else this repository).

Output: one line per finding, ``path:line: kind: text``, on stdout (line order per file), then
exit 1; otherwise one ``OK`` line and exit 0. Exit 2 on a usage error, a missing or unreadable
file, nothing to audit, or zizmor missing, of another version, timing out or unreadable.

Finding kinds (zizmor's findings say so in their text):
- ``action-tag`` / ``action-branch`` / ``action-short-sha``: zizmor: a ``uses:`` action not
  pinned to a full 40-hex commit SHA (``@v4``, ``@main``, ``@11bd719``); ``action-no-ref``: ours,
  a ``uses:`` with no ``@`` at all (zizmor cannot load such a file).
- ``reusable-workflow-tag`` / ``-branch`` / ``-short-sha`` / ``-no-ref``: the same for a reusable
  workflow ``owner/repo/.github/workflows/x.yml@ref``.
- ``docker-unpinned``: zizmor: a ``docker://`` action, ``container:`` or service ``image:``
  without an ``@sha256:`` digest.
- ``zizmor-load-failure``: zizmor cannot load the file (not a valid workflow, a ``uses:`` without
  ``@ref``, a composite action not named ``action.yml``), so none of its actions or images was
  audited: a finding, never a pass.
- ``language-version``: a ``*-version`` / ``*_VERSION`` / ``toolchain:`` value that is not an
  exact ``X.Y.Z`` (``3.x``, ``3.11``, ``latest``, ``>=3.10``, ``lts/*``, ``stable``), a
  ``version:`` input that names a channel (``latest``, ``stable``, ...), an unverifiable
  ``*-version-file``, or ``rustup`` selecting a channel.
- ``runner-latest``: an unversioned runner image (``ubuntu-latest``, ``windows-latest``,
  ``macos-latest``), which changes without notice; use a versioned label (``ubuntu-24.04``).
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
impostor commit: zizmor's audit for it needs the network); packages installed by
``apt-get``/``pip`` from their registries; ``git clone`` of a default branch; expressions
``${{ ... }}`` (the values they read are audited where they are defined); zizmor's other audits.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess  # noqa: TID251 - a standalone script, not lean_eval: it runs zizmor itself
import sys
import sysconfig
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
ZIZMOR_VERSION = "1.32.0"  # the same pin as pyproject.toml's test extra
ZIZMOR_CONFIG = Path(__file__).resolve().with_name("action_pin_audit.zizmor.yml")
ZIZMOR_TIMEOUT = 120  # seconds for one file; zizmor takes well under one

# Every kind of finding this audit reports (the module docstring says what each means).
KINDS = (
    "action-tag", "action-branch", "action-short-sha", "action-no-ref",
    "reusable-workflow-tag", "reusable-workflow-branch", "reusable-workflow-short-sha",
    "reusable-workflow-no-ref", "docker-unpinned", "zizmor-load-failure", "language-version",
    "runner-latest", "go-install", "pip-vcs", "mutable-url", "elan-toolchain",
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
RUNNER_LATEST = re.compile(r"(?<![\w.-])(?:ubuntu|windows|macos)-latest(?:-[a-z0-9-]+)?(?![\w.])",
                           re.IGNORECASE)
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
FEATURE_KEY = re.compile(r"^[\w-]+:\s+")  # zizmor's `image: redis:7` -> `redis:7`
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
class Audit:
    """The findings of one workflow file."""

    display: str
    root: Path
    findings: list[Finding] = field(default_factory=list)
    uses_count: int = 0

    def add(self, line: int, kind: str, text: str) -> None:
        self.findings.append(Finding(self.display, line, kind, text))


# --------------------------------------------------------------------------- YAML, as nodes
#
# PyYAML's composer gives every scalar its own position, so the policy below sees each value
# with the keys above it and the line it was written on; comments are gone, anchors and aliases
# resolved. An alias yields the anchored node again: it is checked once, where it is defined.


def block_lines(node: yaml.ScalarNode, source: list[str]) -> list[tuple[int, str]]:
    """The lines of a ``|``/``>`` block scalar as written, dedented, with their line numbers."""
    first, last = node.start_mark.line + 1, node.end_mark.line
    if node.end_mark.column > 0:
        last += 1  # the scalar ends inside this line (end of file without a newline)
    raw = source[first:last]
    indent = min((len(r) - len(r.lstrip(" ")) for r in raw if r.strip()), default=0)
    return [(first + i + 1, r[indent:].rstrip()) for i, r in enumerate(raw)]


class Walker:
    """Hands every scalar of one workflow to the checks with its key, parents and line."""

    def __init__(self, audit: Audit, source: list[str]) -> None:
        self.audit = audit
        self.source = source
        self.seen: set[int] = set()

    def walk(self, node: yaml.Node, path: list[str]) -> None:
        if id(node) in self.seen:
            return  # an alias: its anchor was checked where it is defined
        self.seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else ""
                self.walk(value, [*path, name])
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                self.walk(item, path)
        elif isinstance(node, yaml.ScalarNode):
            self.scalar(node, path[-1] if path else "", path[:-1])

    def scalar(self, node: yaml.ScalarNode, key: str, parents: list[str]) -> None:
        line = node.start_mark.line + 1
        block = node.style in ("|", ">")
        if key == "run":
            pieces = (block_lines(node, self.source) if block
                      else [(line + i, text) for i, text in enumerate(node.value.split("\n"))])
            check_shell(self.audit, pieces)
        elif key == "script":
            return
        elif block:
            if key not in PROSE_KEYS:
                for lineno, text in block_lines(node, self.source):
                    if text.strip():
                        check_scalar(self.audit, key, text.strip(), lineno, parents)
        else:
            check_scalar(self.audit, key, node.value.strip(), line, parents)


# --------------------------------------------------------------------------- YAML value checks


def check_scalar(audit: Audit, key: str, value: str, lineno: int, parents: list[str]) -> None:
    """Every check that applies to the scalar ``value`` of ``key``."""
    if not value:
        return
    if key == "uses":
        audit.uses_count += 1
        check_uses_has_ref(audit, value, lineno)
        return  # its ref and any docker:// image are zizmor's (unpinned-uses, unpinned-images)
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


def check_uses_has_ref(audit: Audit, value: str, lineno: int) -> None:
    """A remote ``uses:`` without ``@``: zizmor cannot load such a file, so we name the line."""
    if value.startswith(("./", ".\\", "docker://")) or "@" in value:
        return
    target = "reusable-workflow" if REUSABLE.search(value) else "action"
    what = "reusable workflow" if target == "reusable-workflow" else "action"
    audit.add(lineno, f"{target}-no-ref",
              f"{what} `{value}` names no ref; pin it to a full 40-hex commit SHA")


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


def strip_comment(line: str) -> str:
    """``line`` without a trailing shell comment (``#`` at a word start, outside quotes)."""
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


# --------------------------------------------------------------------------- zizmor
#
# zizmor parses each file and owns the pinning of `uses:` refs and images: the findings of those
# two audits (its others are not ours) are mapped to our kinds. It gets its own environment, so no
# ZIZMOR_CONFIG, GH_TOKEN or other setting of the caller reaches it.
ZIZMOR_ENV = {"PATH": os.defpath, "LC_ALL": "C.UTF-8", "NO_COLOR": "1", "RUST_BACKTRACE": "0"}
ZIZMOR_ARGS = ("--offline", "--no-ignores", "--no-exit-codes", "--persona", "auditor",
               "--config", str(ZIZMOR_CONFIG), "--format", "json", "--no-progress", "-q", "--")


def zizmor(*args: str) -> subprocess.CompletedProcess[str]:
    """Run zizmor (beside this interpreter, else on PATH): argv a tuple, no shell, a timeout."""
    beside = Path(sysconfig.get_path("scripts")) / "zizmor"
    program = str(beside) if beside.is_file() else shutil.which("zizmor")
    if program is None:
        raise UsageError(f"zizmor not found; python -m pip install zizmor=={ZIZMOR_VERSION}")
    try:
        return subprocess.run((program, *args), capture_output=True, text=True, errors="replace",
                              env=ZIZMOR_ENV, cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                              timeout=ZIZMOR_TIMEOUT, check=False)
    except (subprocess.TimeoutExpired, OSError) as exc:
        raise UsageError(f"zizmor {args[-1]}: {exc}") from exc


def zizmor_audit(audit: Audit, path: Path) -> None:
    done = zizmor(*ZIZMOR_ARGS, str(path.resolve()))
    if done.returncode != 0:  # it cannot load the file, so nothing in it was audited: a finding
        text = done.stderr.split("Stack backtrace:")[0]
        why = [m.group(1) for m in re.finditer(r"^ERROR [\w:]+: (?:msg=)?(.*)$", text, re.M)]
        why += re.findall(r"^\s+\d+: (.*)$", text, re.M)[-1:] or ["no reason given"]
        at = re.search(r"at line (\d+)", why[-1])
        audit.add(int(at.group(1)) if at else 1, "zizmor-load-failure",
                  f"zizmor cannot load this file ({'; '.join(why)[:600]}), so none of its "
                  "actions or images was audited; make it a valid workflow, or name the "
                  "composite action action.yml")
        return
    try:
        for finding in json.loads(done.stdout):
            if finding["ident"] not in ("unpinned-uses", "unpinned-images"):
                continue
            primary = next(loc for loc in finding["locations"]
                           if loc["symbolic"]["kind"] == "Primary")["concrete"]
            value = FEATURE_KEY.sub("", primary["feature"].strip()).strip("'\"")
            line = primary["location"]["start_point"]["row"] + 1
            if finding["ident"] == "unpinned-uses":
                audit.add(line, *uses_finding(value))
            else:
                audit.add(line, "docker-unpinned", f"image `{value}` has no @sha256: digest; "
                          "tags move (zizmor unpinned-images)")
    except (ValueError, KeyError, TypeError, StopIteration) as exc:
        raise UsageError(f"{audit.display}: zizmor printed no report this audit reads "
                         f"({type(exc).__name__}: {exc})") from exc


def uses_finding(value: str) -> tuple[str, str]:
    """The kind and text of zizmor's unpinned-uses finding on ``name@ref``."""
    name, _, ref = value.partition("@")
    target = "reusable-workflow" if REUSABLE.search(name) else "action"
    if SHORT_SHA.fullmatch(ref) and re.search(r"\d", ref):
        kind, why = "short-sha", "an abbreviated SHA"
    elif TAG_LIKE.fullmatch(ref):
        kind, why = "tag", f"tag `{ref}`, which can be moved"
    else:
        kind, why = "branch", f"the branch or name `{ref}`, which moves"
    text = f"{target.replace('-', ' ')} `{value}` is pinned to {why}; pin the full 40-hex commit"
    return f"{target}-{kind}", f"{text} SHA (zizmor unpinned-uses)"


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
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{display}{where}: not valid YAML "
                         f"({getattr(exc, 'problem', None) or exc})") from exc
    walker = Walker(audit, text.splitlines())
    for document in documents:
        if document is not None:
            walker.walk(document, [])
    zizmor_audit(audit, path)
    audit.findings.sort(key=lambda finding: finding.line)  # stable: same-line order is kept
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
        if zizmor("--version").stdout.split()[-1:] != [ZIZMOR_VERSION]:
            raise UsageError(f"this audit needs zizmor {ZIZMOR_VERSION}, the rules it relies on; "
                             f"python -m pip install zizmor=={ZIZMOR_VERSION}")
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
