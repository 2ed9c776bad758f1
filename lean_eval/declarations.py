"""Read trusted Lean source as text: header imports and top-level declarations.

This reads the benchmark's own files (statements, bridges, starters) for consistency checks;
it is not the fail-closed check of submitted headers. Comments (nested ``/- -/`` and ``--``)
are skipped; string literals are not interpreted.
"""

from __future__ import annotations

import re
from typing import NamedTuple


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


def skip_comments(text: str, pos: int) -> int:
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if text.startswith("--", pos):
            end = text.find("\n", pos)
            pos = len(text) if end < 0 else end
        elif text.startswith("/-", pos):
            depth, pos = 1, pos + 2
            while pos < len(text) and depth:
                if text.startswith("/-", pos):
                    depth, pos = depth + 1, pos + 2
                elif text.startswith("-/", pos):
                    depth, pos = depth - 1, pos + 2
                else:
                    pos += 1
        else:
            return pos


_HEADER_WORD = re.compile(r"(module|prelude|public|meta|import|all)(?![\w.'!?])")
_MODULE = re.compile(r"[^\s]+")


def lean_imports(text: str) -> tuple[str, ...]:
    """The modules a trusted Lean file's header imports (``«»`` escapes removed)."""
    found: list[str] = []
    pos = skip_comments(text, 0)
    while (word := _HEADER_WORD.match(text, pos)) is not None:
        pos = skip_comments(text, word.end())
        if word.group(1) == "import":
            if (all_kw := re.match(r"all(?![\w.'!?])", text[pos:])) is not None:
                pos = skip_comments(text, pos + all_kw.end())
            module = _MODULE.match(text, pos)
            if module is None:
                break
            found.append(module.group(0).replace("«", "").replace("»", ""))
            pos = skip_comments(text, module.end())
    return tuple(found)


_DECL = re.compile(
    r"^(?:@\[[^\]]*\]\s*)*(?:(?:private|protected|noncomputable|partial|unsafe|nonrec)\s+)*"
    r"(theorem|lemma|def|abbrev|instance|structure|class|inductive|axiom|opaque)"
    r"(?:\s+\(priority\s*:=[^)]*\))?\s+([^\s:({\[]+)")
_SCOPE = re.compile(r"^(namespace|section|end)\b\s*([^\s]*)")


def strip_comments(text: str) -> str:
    """``text`` with every comment blanked out (newlines kept, so line numbers stay)."""
    out: list[str] = []
    pos = 0
    while pos < len(text):
        if text.startswith("--", pos):
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
        elif text.startswith("/-", pos):
            depth, end = 1, pos + 2
            while end < len(text) and depth:
                if text.startswith("/-", end):
                    depth, end = depth + 1, end + 2
                elif text.startswith("-/", end):
                    depth, end = depth - 1, end + 2
                else:
                    end += 1
        else:
            out.append(text[pos])
            pos += 1
            continue
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
