"""Where a submission's problem directories are (design §4.3), and what else it holds.

A problem directory is a directory holding an entry ``Submission.lean`` and either named after a
problem id (not the root) or holding a ``lakefile.toml`` whose ``name`` is a problem id (the
root included: the public pipeline's "gist" shape, and a repository made from a workspace); it
is not searched further. A directory named after one problem id whose ``lakefile.toml`` names
another is a conflict (``Found.conflicts``). In a fork of the benchmark (a top-level
``workspaces/``) only ``workspaces/<id>/`` are. Every other entry is listed with why it is
ignored, and a leaf a limit made opaque goes to ``Found.hidden``: a problem directory may be
behind it (tests/intake/test_intake.py, tests/intake/test_intake_layout.py).

When one problem has several directories and all but one are the unchanged starter
(``starters``), the changed one is the problem's and the others are listed as ignored
(``settle_duplicates``); otherwise the duplicates stay, and intake rejects the submission.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import NamedTuple

import tomllib

from lean_eval.intake.bounds import TOO_DEEP, UNREADABLE, Node, show

OPAQUE = frozenset({TOO_DEEP, UNREADABLE})  # leaves that may hide a problem directory


class Found(NamedTuple):
    """Problem directories by id (several for an id means a duplicate), ignored entries, and
    opaque leaves outside every problem directory: (path, name, leaf), sorted by path."""

    dirs: dict[str, list[tuple[str, Node]]]
    ignored: list[str]
    hidden: list[tuple[str, str, Node]]
    conflicts: tuple[str, ...] = ()  # a directory named after one problem, its lakefile another


# Each problem's starter files by path in its directory (``Submission.lean``, ...).
Starters = Mapping[str, Mapping[str, bytes]]


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


def lakefile_name(node: Node) -> str | None:
    """The string ``name`` of the directory's ``lakefile.toml``, if it has one that reads."""
    lakefile = node.children.get("lakefile.toml")
    if lakefile is None or lakefile.kind != "file" or lakefile.oversize:
        return None
    try:
        name = tomllib.loads(lakefile.data.decode("utf-8")).get("name")
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return name if isinstance(name, str) else None


def problem_of(name: str | None, node: Node, problem_ids: frozenset[str]) -> str | None:
    """The problem directory ``node`` (named ``name``; None for the root) is for, if any: its
    name, else its lakefile's (a conflict between the two is ``conflict``'s to report)."""
    if node.kind != "dir" or "Submission.lean" not in node.children:
        return None
    if name is not None and name in problem_ids:
        return name
    declared = lakefile_name(node)
    return declared if declared in problem_ids else None


def conflict(name: str, node: Node, path: str, problem_ids: frozenset[str]) -> str | None:
    declared = lakefile_name(node)
    if name in problem_ids and declared in problem_ids and declared != name:
        return (f"{show(path)}: the directory is named after problem {name} but its "
                f"lakefile.toml's name is problem {declared}; rename one so they agree")
    return None


def is_problem_dir(name: str, node: Node, problem_ids: frozenset[str]) -> bool:
    return problem_of(name, node, problem_ids) is not None


def is_starter(node: Node, starter: Mapping[str, bytes]) -> bool:
    """Whether every submitted Lean file of the directory is its starter's (and one exists)."""
    files: dict[str, bytes] = {}
    stack = [("", node)]
    while stack:
        prefix, here = stack.pop()
        for name, child in here.children.items():
            rel = prefix + name
            if child.kind == "dir" and (rel == "Submission" or rel.startswith("Submission/")):
                stack.append((rel + "/", child))
            elif child.kind == "file" and (rel == "Submission.lean" or (
                    rel.startswith("Submission/") and rel.endswith(".lean"))):
                files[rel] = child.data
            elif child.kind not in ("dir", "file") and rel.startswith("Submission"):
                return False  # a link or special entry where a starter file would be
    return "Submission.lean" in files and all(starter.get(r) == d for r, d in files.items())


def settle_duplicates(found: Found, starters: Starters) -> Found:
    """Each problem with several directories of which all but one are its unchanged starter
    keeps the changed one; the others are ignored, with why. Other duplicates stay."""
    dirs = dict(found.dirs)
    ignored = list(found.ignored)
    for pid, places in sorted(found.dirs.items()):
        if len(places) < 2 or pid not in starters:
            continue
        changed = [(p, n) for p, n in places if not is_starter(n, starters[pid])]
        if len(changed) > 1:
            continue
        kept = changed[0] if changed else places[0]
        dirs[pid] = [kept]
        ignored.extend(f"{show(p)}/: an unchanged copy of the starter of {pid}, not "
                       f"scored ({show(kept[0])} is)" for p, _ in places if p != kept[0])
    return Found(dirs, sorted(ignored), found.hidden, found.conflicts)


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
    conflicts: list[str] = []
    memo: dict[int, bool] = {}
    at_root = problem_of(None, root, problem_ids)
    if at_root is not None:  # the submission is itself the problem directory (a gist)
        return Found({at_root: [(".", root)]}, [], [])

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
            pid = problem_of(name, child, problem_ids)
            if pid is not None:
                found.setdefault(pid, []).append((path, child))
                clash = conflict(name, child, path, problem_ids)
                if clash:
                    conflicts.append(clash)
            elif child.kind == "dir":
                if name in problem_ids:
                    ignored.append(f"{show(path)}/: named after problem {name}, "
                                   f"no Submission.lean{miscased(child)}")
                if holds(child):
                    visit(child, path + "/")
                elif name not in problem_ids:
                    ignored.append(_other(name, child, path))
            else:
                ignored.append(_other(name, child, path))

    visit(root, "")
    hidden: list[tuple[str, str, Node]] = []
    _opaque(root, "", {id(node) for dirs in found.values() for _, node in dirs}, hidden)
    return Found(found, ignored, hidden, tuple(conflicts))


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
            ignored.append(f"{show(path)}/: named after problem {name}, no Submission.lean"
                           + miscased(child))
        elif child.kind == "dir":
            ignored.append(f"{show(path)}/: not a catalog problem id, not read")
        else:
            ignored.append(_other(name, child, path))
    return Found(found, ignored, hidden)


def miscased(node: Node) -> str:
    """For a problem directory without Submission.lean: the file it most likely meant when
    only the case differs (names are case-sensitive: ``submission.lean`` is not read)."""
    near = sorted(n for n in node.children
                  if n.lower() == "submission.lean" and n != "Submission.lean")
    if not near:
        return ""
    return f"; it holds {show(near[0])}: names are case-sensitive, rename it to Submission.lean"


def case_hint(name: str) -> str:
    """For an entry of a problem directory that is not read: the name meant, when only the
    case differs from ``Submission.lean`` or ``Submission/`` (else "")."""
    for meant, shown in (("Submission.lean", "Submission.lean"), ("Submission", "Submission/")):
        if name != meant and name.lower() == meant.lower():
            return f"; names are case-sensitive: did you mean {shown}?"
    return ""


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
                lacking.append(f"{show(path)}/ has no Submission.lean{miscased(child)}")
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
