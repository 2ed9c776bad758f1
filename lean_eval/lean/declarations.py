"""Trusted Lean source read as text: declarations and their statements, for the benchmark's
consistency checks (design §4.2). The model, which the stand-in's (design §7) must match
(``tests/lean/test_declarations.py``):

- comments are blanked out (lexed by :func:`lean_eval.lean.header.comment_end`); string and
  character literals are kept and never read as brackets, comments or keywords;
- a declaration starts at a line of the form
  ``[open ... in | set_option N V in]* [@[...]]* [MODIFIERS]* KEYWORD name``;
  ``instance (priority := p) n`` is named ``n`` and an instance without a name is not recorded;
- it runs to the next declaration or *boundary* line: ``end``, ``namespace``,
  ``[noncomputable|public]* section``, an attribute-only line ``@[...]``, and lines starting
  with ``open``, ``set_option``, ``variable``, ``universe``, ``attribute``, ``example``,
  ``mutual`` or ``#``;
- ``namespace A.B`` ... ``end`` prefix names with ``A.B.``; sections nest without prefixing;
  ``_root_.n`` escapes;
- its *statement* is the text between the name and the first ``:=``, ``where`` or
  line-leading ``| ... =>`` outside ``() [] {} ⟨⟩ ⦃⦄`` and literals, whitespace collapsed.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from lean_eval.lean.header import comment_end

KEYWORDS = ("theorem", "lemma", "def", "abbrev", "instance", "structure", "class", "inductive",
            "axiom", "opaque")
MODIFIERS = ("private", "protected", "noncomputable", "partial", "unsafe", "nonrec")
_OPEN = "([{⟨⦃"
_CLOSE = ")]}⟩⦄"
_IDENT_CHAR = re.compile(r"[\w'!?.]")
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
_CHAR = re.compile(r"'(?:\\.|[^\\'\n])'")
_ATTRS = r"(?:@\[(?:[^\[\]]|\[[^\[\]]*\])*\]\s*)*"
_PREFIX = r"(?:(?:open\s+[^\n]*?|set_option\s+\S+\s+\S+)\s+in(?:\s+|$))*"
_DECL = re.compile(r"^\s*" + _PREFIX + _ATTRS + r"(?:(?:" + "|".join(MODIFIERS) + r")\s+)*"
                   r"(" + "|".join(KEYWORDS) + r")(?=\s|$)(.*)$")
_PRIORITY = re.compile(r"^\s*\(\s*priority\s*:=[^)]*\)")
_NAME = re.compile(r"^\s+([^\s:(\[{⦃⟨]+)")
_SCOPE = re.compile(r"^\s*(?:(?:noncomputable|public)\s+)*(namespace|section|end)(?=\s|$)\s*(\S*)")
_ATTR_LINE = r"(?:@\[(?:[^\[\]]|\[[^\[\]]*\])*\]\s*)+$"
_BOUNDARY = re.compile(r"^\s*(?:(?:open|set_option|variable|universe|attribute|example|mutual)"
                       r"(?=\s|$)|#|" + _ATTR_LINE + ")")
_ALTERNATIVE = re.compile(r"[ \t]*\|[^\n]*=>")


class Declaration(NamedTuple):
    """One declaration: its full name, keyword, statement and the text up to the next one."""

    name: str
    keyword: str
    text: str  # from the name to the end of the declaration, comments blanked
    statement: str  # binders and type, whitespace collapsed (see the module docstring)
    line: int  # 1-based line of the keyword

    @property
    def signature(self) -> str:
        """The statement (kept under its former name)."""
        return self.statement

    @property
    def body(self) -> str:
        """The text after the statement (the value, ``where`` fields or alternatives)."""
        return self.text[len(split_statement(self.text)[0]):]


def _literal_end(text: str, pos: int) -> int:
    """End of the string or character literal starting at ``pos``, or ``pos`` if none."""
    if text[pos] == '"':
        match = _STRING.match(text, pos)
        return match.end() if match else len(text)
    if text[pos] == "'" and (pos == 0 or not _IDENT_CHAR.match(text[pos - 1])):
        match = _CHAR.match(text, pos)
        if match:
            return match.end()
    return pos


def strip_comments(text: str) -> str:
    """``text`` with every comment blanked out, newlines kept so line numbers stay; a comment
    that never ends runs to the end of the text."""
    out: list[str] = []
    pos = 0
    while pos < len(text):
        end = _literal_end(text, pos)
        if end > pos:
            out.append(text[pos:end])
            pos = end
            continue
        if not text.startswith(("--", "/-"), pos):
            out.append(text[pos])
            pos += 1
            continue
        closed = comment_end(text, pos)
        end = len(text) if closed is None else closed
        out.append("".join("\n" if ch == "\n" else " " for ch in text[pos:end]))
        pos = end
    return "".join(out)


def split_statement(text: str) -> tuple[str, str]:
    """``text`` (what follows a declaration's name) split where its statement ends (the model
    in the module docstring)."""
    depth = 0
    pos = 0
    while pos < len(text):
        end = _literal_end(text, pos)
        if end > pos:
            pos = end
            continue
        char = text[pos]
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0:
            if text.startswith(":=", pos):
                return text[:pos], text[pos:]
            before = text[pos - 1] if pos else " "
            if (text.startswith("where", pos) and not _IDENT_CHAR.match(before)
                    and not _IDENT_CHAR.match(text[pos + 5:pos + 6] or " ")):
                return text[:pos], text[pos:]
            if before == "\n" and _ALTERNATIVE.match(text, pos):
                return text[:pos], text[pos:]
        pos += 1
    return text, ""


def collapse(text: str) -> str:
    return " ".join(text.split())


def declarations(text: str) -> list[Declaration]:
    """The named declarations of a Lean file, in file order, with their namespaces applied."""
    scopes: list[str | None] = []
    found: list[Declaration] = []
    current: tuple[str, str, int, list[str]] | None = None

    def finish() -> None:
        nonlocal current
        if current is not None:
            name, keyword, line, chunks = current
            body = "\n".join(chunks)
            found.append(Declaration(name, keyword, body,
                                     collapse(split_statement(body)[0]), line))
        current = None

    for number, line in enumerate(strip_comments(text).splitlines(), start=1):
        decl = _DECL.match(line)
        if decl:
            finish()
            keyword, rest = decl.groups()
            if keyword == "instance" and (priority := _PRIORITY.match(rest)):
                rest = " " + rest[priority.end():]
            named = _NAME.match(rest)
            if named:
                name = named.group(1)
                if name.startswith("_root_."):
                    name = name.removeprefix("_root_.")
                else:
                    prefix = ".".join(part for part in scopes if part)
                    name = f"{prefix}.{name}" if prefix else name
                current = (name, keyword, number, [rest[named.end():]])
            continue
        scope = _SCOPE.match(line)
        if scope:
            finish()
            kind, label = scope.groups()
            if kind == "end":
                if scopes:
                    scopes.pop()
            else:
                scopes.append(label if kind == "namespace" else None)
        elif _BOUNDARY.match(line):
            finish()
        elif current is not None:
            current[3].append(line)
    finish()
    return found
