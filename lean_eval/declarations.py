"""Read trusted Lean source as text: top-level declarations.

This reads the benchmark's own files (statements, bridges, starters) for consistency checks.
Comments (nested ``/- -/`` and ``--``, lexed by :mod:`lean_eval.header` as Lean does) are
skipped; string literals are not interpreted. Import headers are read by :mod:`lean_eval.header`,
the same parser that checks submitted files.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from lean_eval.header import comment_end


class Declaration(NamedTuple):
    """One declaration: its full name, keyword and the text up to the next declaration."""

    name: str
    keyword: str
    text: str
    signature_start: int = 0  # where the binders and type begin in ``text``

    @property
    def signature(self) -> str:
        """The binders and type: the text between the name and the first ``:=``,
        whitespace-normalised."""
        rest = self.text[self.signature_start:]
        end = rest.find(":=")
        return " ".join((rest if end < 0 else rest[:end]).split())


_DECL = re.compile(
    r"^(?:@\[[^\]]*\]\s*)*(?:(?:private|protected|noncomputable|partial|unsafe|nonrec)\s+)*"
    r"(theorem|lemma|def|abbrev|instance|structure|class|inductive|axiom|opaque)"
    r"(?:\s+\(priority\s*:=[^)]*\))?\s+([^\s:({\[]+)")
_SCOPE = re.compile(r"^(namespace|section|end)\b\s*([^\s]*)")


def strip_comments(text: str) -> str:
    """``text`` with every comment blanked out (newlines kept, so line numbers stay).

    Comments are lexed by :func:`lean_eval.header.comment_end`, as Lean reads them (doc comments
    included); one that never ends runs to the end of the text.
    """
    out: list[str] = []
    pos = 0
    while pos < len(text):
        if not text.startswith(("--", "/-"), pos):
            out.append(text[pos])
            pos += 1
            continue
        end = comment_end(text, pos)
        end = len(text) if end is None else end
        out.append("".join("\n" if ch == "\n" else " " for ch in text[pos:end]))
        pos = end
    return "".join(out)


def declarations(text: str) -> list[Declaration]:
    """Declarations starting at the beginning of a line, with their namespaces applied."""
    scopes: list[str | None] = []
    found: list[Declaration] = []
    current: list[str] | None = None
    name = keyword = ""
    start = 0
    for line in strip_comments(text).splitlines():
        scope = _SCOPE.match(line)
        decl = _DECL.match(line)
        if (scope or decl) and current is not None:
            found.append(Declaration(name, keyword, "\n".join(current), start))
            current = None
        if scope:
            kind, label = scope.groups()
            if kind == "end":
                if scopes:
                    scopes.pop()
            else:
                scopes.append(label if kind == "namespace" else None)
        elif decl:
            keyword = decl.group(1)
            prefix = ".".join(part for part in scopes if part)
            name = f"{prefix}.{decl.group(2)}" if prefix else decl.group(2)
            start = decl.end()
            current = [line]
        elif current is not None:
            current.append(line)
    if current is not None:
        found.append(Declaration(name, keyword, "\n".join(current), start))
    return found
