"""Where a submission's problem directories are (design §4.3), and what else it holds.

A problem directory is a directory, not the root, named after a problem id and holding an entry
``Submission.lean``; it is not searched further. In a fork of the benchmark (a top-level
``workspaces/``) only ``workspaces/<id>/`` are. Every other entry is listed with why it is
ignored, and a leaf a limit made opaque goes to ``Found.hidden``: a problem directory may be
behind it (tests/intake/test_intake.py, test_intake_layout.py).
"""

from __future__ import annotations

import difflib
from typing import NamedTuple

from lean_eval.intake.bounds import TOO_DEEP, UNREADABLE, Node, show

OPAQUE = frozenset({TOO_DEEP, UNREADABLE})  # leaves that may hide a problem directory


class Found(NamedTuple):
    """Problem directories by id (several for an id means a duplicate), ignored entries, and
    opaque leaves outside every problem directory: (path, name, leaf), sorted by path."""

    dirs: dict[str, list[tuple[str, Node]]]
    ignored: list[str]
    hidden: list[tuple[str, str, Node]]


def _opaque(node: Node, prefix: str, skip: set[int], out: list[tuple[str, str, Node]]) -> None:
    for name in sorted(node.children):
        child, path = node.children[name], prefix + name
        if id(child) in skip:
            continue
        if child.kind in OPAQUE:
            out.append((path, name, child))
        elif child.kind == "dir":
            _opaque(child, path + "/", skip, out)


def enclosing(parts: tuple[str, ...], root: Node, problem_ids: frozenset[str]) -> str | None:
    """The problem id of the directory `parts` (where a walk stopped) is in, if any: in a fork
    ``workspaces/<id>``, else the outermost component named after a problem id."""
    workspaces = root.children.get("workspaces")
    if workspaces is not None and workspaces.kind == "dir":
        fork = len(parts) > 1 and parts[0] == "workspaces" and parts[1] in problem_ids
        return parts[1] if fork else None
    return next((part for part in parts if part in problem_ids), None)


def is_problem_dir(name: str, node: Node, problem_ids: frozenset[str]) -> bool:
    return node.kind == "dir" and name in problem_ids and "Submission.lean" in node.children


def _other(name: str, node: Node, where: str) -> str:
    shown = show(where)
    if node.kind == "skipped":
        return f"{shown}: build or version-control data, not read"
    if node.kind == TOO_DEEP:
        return f"{shown}: deeper than the depth limit, not read"
    if node.kind == UNREADABLE:
        return f"{shown}: cannot be read by the harness ({node.error})"
    if node.kind == "dir":
        return f"{shown}/: holds no problem directory"
    if node.kind == "file" and name == "Submission.lean":
        return f"{shown}: its directory is not named after a catalog problem id"
    if node.kind == "file":
        return f"{shown}: outside every problem directory"
    return f"{shown}: {node.kind}, not followed or read"


def find(root: Node, problem_ids: frozenset[str]) -> Found:
    """Every problem directory of `root` (a fork's only under ``workspaces/``) and the rest."""
    workspaces = root.children.get("workspaces")
    if workspaces is not None and workspaces.kind == "dir":
        return _find_fork(root, workspaces, problem_ids)
    found: dict[str, list[tuple[str, Node]]] = {}
    ignored: list[str] = []
    memo: dict[int, bool] = {}

    def holds(node: Node) -> bool:
        if id(node) not in memo:
            memo[id(node)] = any(
                is_problem_dir(n, c, problem_ids) or (c.kind == "dir" and holds(c))
                for n, c in node.children.items()
            )
        return memo[id(node)]

    def visit(node: Node, prefix: str) -> None:
        for name in sorted(node.children):
            child, path = node.children[name], prefix + name
            if is_problem_dir(name, child, problem_ids):
                found.setdefault(name, []).append((path, child))
            elif child.kind == "dir":
                if name in problem_ids:
                    ignored.append(f"{show(path)}/: named after problem {name}, "
                                   "no Submission.lean")
                if holds(child):
                    visit(child, path + "/")
                elif name not in problem_ids:
                    ignored.append(_other(name, child, path))
            else:
                ignored.append(_other(name, child, path))

    visit(root, "")
    hidden: list[tuple[str, str, Node]] = []
    _opaque(root, "", {id(node) for dirs in found.values() for _, node in dirs}, hidden)
    return Found(found, ignored, hidden)


def _find_fork(root: Node, workspaces: Node, problem_ids: frozenset[str]) -> Found:
    found: dict[str, list[tuple[str, Node]]] = {}
    ignored: list[str] = []
    hidden = [(f"workspaces/{name}", name, child)
              for name, child in sorted(workspaces.children.items()) if child.kind in OPAQUE]
    for name in sorted(root.children):
        if name != "workspaces":
            child = root.children[name]
            slash = "/" if child.kind == "dir" else ""
            why = ("build or version-control data" if child.kind == "skipped" else
                   "outside workspaces/ of a fork of the benchmark")
            ignored.append(f"{show(name)}{slash}: {why}, not read")
    for name in sorted(workspaces.children):
        child, path = workspaces.children[name], f"workspaces/{name}"
        if is_problem_dir(name, child, problem_ids):
            found[name] = [(path, child)]
        elif child.kind == "dir" and name in problem_ids:
            ignored.append(f"{show(path)}/: named after problem {name}, no Submission.lean")
        elif child.kind == "dir":
            ignored.append(f"{show(path)}/: not a catalog problem id, not read")
        else:
            ignored.append(_other(name, child, path))
    return Found(found, ignored, hidden)


def hint(root: Node, problem_ids: frozenset[str]) -> str:
    """What to change when no problem directory was found: the likeliest mistake first."""
    top = root.children.get("Submission.lean")
    if top is not None and top.kind == "file":
        return ("Submission.lean is at the top level: put it in a directory named after the "
                f"problem id (for example {_example(problem_ids)}/Submission.lean)")
    guesses: list[str] = []
    lacking: list[str] = []
    stack: list[tuple[str, Node]] = [("", root)]
    seen = 0
    while stack and seen < 10_000:
        prefix, node = stack.pop()
        for name in sorted(node.children):
            child, seen = node.children[name], seen + 1
            if child.kind != "dir":
                continue
            path = prefix + name
            if name in problem_ids:
                lacking.append(f"{show(path)}/ has no Submission.lean")
            elif "Submission.lean" in child.children:
                close = _closest(name, problem_ids)
                if close:
                    guesses.append(f"{show(path)}/ is not a problem id; did you mean "
                                   f"{' or '.join(close)}?")
                else:
                    guesses.append(f"{show(path)}/ holds a Submission.lean but is not named "
                                   "after a problem id")
            stack.append((path + "/", child))
    found = sorted(guesses)[:5] + sorted(lacking)[:5]
    if found:
        return "; ".join(found)
    return ("no directory named after a problem id holds a Submission.lean (put each proof in "
            f"<problem id>/Submission.lean, for example {_example(problem_ids)}/Submission.lean)")


def _example(problem_ids: frozenset[str]) -> str:
    return min(problem_ids) if problem_ids else "<problem id>"


def _closest(name: str, problem_ids: frozenset[str]) -> list[str]:
    candidates = sorted(problem_ids)
    by_shape = {p.replace("_", "").lower(): p for p in candidates}
    shape = name.replace("-", "").replace("_", "").replace(" ", "").lower()
    if shape in by_shape:
        return [by_shape[shape]]
    return difflib.get_close_matches(name.replace("-", "_"), candidates, n=3, cutoff=0.6)
