"""Import header check (design §4.3, SECURITY.md invariant 2): a Lean file's header, fail-closed.

The checker reads ``module``? ``prelude``? then imports (``public``? ``meta``? ``import``
``all``? *name*) across whitespace and comments, and stops at the first token that cannot
continue the header. Invariants (tests/lean/test_header.py, test_header_lexing.py):

- Whitespace and comments are Lean's own: comments as :func:`comment_end` lexes them; ``/--``
  and ``/-!`` are doc-comment tokens, which end the header.
- Fail-closed: where the header may continue, anything the checker does not fully understand
  (a tab, a lone carriage return, a control or non-ASCII character, an unterminated comment, a
  module name that is not plain identifiers ``[A-Za-z_][A-Za-z0-9_']*`` joined by dots, such as
  a ``«...»`` escape) rejects the file, and so does ``import`` a few words after an unknown word
  or a doc comment. A word is read no further than Lean reads it.
- Linear in the length of the header: one pass, a bounded look-ahead.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_']*(?:\.[A-Za-z_][A-Za-z0-9_']*)*")
_COMMENT_MARK = re.compile(r"/-|-/")  # Lean scans left to right: the leftmost mark wins
_DOC_COMMENT = ("/--", "/-!")
_ODD_RUN = re.compile(r"[^ \n\r\t]{0,60}")
_MODIFIERS = ("public", "meta")
_KEYWORDS = frozenset({"module", "prelude", "import", "public", "meta", "all"})
_LOOKAHEAD_WORDS = 4


class Import(NamedTuple):
    module: str
    public: bool = False
    meta: bool = False
    all: bool = False


class Header(NamedTuple):
    module: bool
    prelude: bool
    imports: tuple[Import, ...]
    end: int  # offset of the first token after the header (len(text) if none)


class HeaderError(ValueError):
    """The header is not understood or names a module that is not plain identifiers."""


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def fail(self, why: str, at: int | None = None) -> HeaderError:
        where = self.pos if at is None else at
        line = self.text.count("\n", 0, where) + 1
        return HeaderError(f"import header, line {line}: {why}")

    def skip(self) -> None:
        """Skip whitespace and comments as Lean does; stop before anything else."""
        text, end = self.text, len(self.text)
        while self.pos < end:
            c = text[self.pos]
            if c in " \n":
                self.pos += 1
            elif text.startswith("\r\n", self.pos):
                self.pos += 2
            elif text.startswith("--", self.pos) or (
                    text.startswith("/-", self.pos)
                    and not text.startswith(_DOC_COMMENT, self.pos)):  # a doc comment is a token
                self.pos = self._comment_end(self.pos)
            elif c == "\t":
                raise self.fail("a tab (Lean refuses tabs)")
            elif c == "\r":
                raise self.fail("a carriage return not followed by a newline")
            else:
                return

    def _comment_end(self, start: int) -> int:
        end = comment_end(self.text, start)
        if end is None:
            raise self.fail("an unterminated block comment", start)
        return end

    def doc_comment_end(self, at: int) -> int | None:
        """The end of the doc comment at `at` (None if there is none); unterminated: refused."""
        return self._comment_end(at) if self.text.startswith(_DOC_COMMENT, at) else None

    def word(self) -> tuple[str, int] | None:
        """The identifier chain at the current position (not consumed) and its end."""
        match = _WORD.match(self.text, self.pos)
        return (match.group(), match.end()) if match else None

    def check_start(self) -> None:
        """Refuse a header position holding a character the checker does not understand."""
        c = self.text[self.pos]
        if ord(c) < 0x20 or ord(c) >= 0x7F:
            raise self.fail(f"unexpected character U+{ord(c):04X} where an import may stand")

    def peek_word_after(self, end: int) -> str | None:
        """The word after `end`, across whitespace and comments (not consumed); a header keyword
        running into a character the checker refuses there rejects the file."""
        saved = self.pos
        try:
            self.pos = end
            self.skip()
            if self.pos >= len(self.text):
                return None
            self.check_start()
            found = self.word()
            if found is None:
                return None
            if found[0] in _KEYWORDS and not self._ends_cleanly(found[1]):
                raise self.fail(f"{found[0]!r} followed by an unexpected character", found[1])
            return found[0]
        finally:
            self.pos = saved

    def after(self, end: int) -> int:
        """The position of the next token after `end` (whitespace and comments skipped)."""
        saved = self.pos
        try:
            self.pos = end
            self.skip()
            return self.pos
        finally:
            self.pos = saved

    def _ends_cleanly(self, end: int) -> bool:
        """Lean would end the identifier where the checker does."""
        text = self.text
        if end >= len(text):
            return True
        return text[end] in " \n\r\t" or text.startswith(("--", "/-"), end)

    def module_name(self) -> str:
        start = self.pos
        if start >= len(self.text):
            raise self.fail("`import` without a module name")
        found = self.word()
        if found is None or not self._ends_cleanly(found[1]) or found[0] in _KEYWORDS:
            run = _ODD_RUN.match(self.text, start)
            shown = run.group() if run else ""
            raise self.fail(f"module name {shown!r} is not a chain of plain identifiers "
                            "(no «...» escapes)", start)
        self.pos = found[1]
        return found[0]


def parse_header(text: str) -> Header:
    """The header of `text`; HeaderError when it is not understood or names an odd module."""
    scan = _Scanner(text)
    module = prelude = False
    imports: list[Import] = []
    first = True
    while True:
        scan.skip()
        if scan.pos >= len(text):
            break
        scan.check_start()
        found = scan.word()
        if found is None:
            doc = scan.doc_comment_end(scan.pos)
            if doc is not None:  # a doc comment ends the header; no import may follow it
                _refuse_import_ahead(scan, "a doc comment", doc)
            break  # punctuation, a digit or a doc comment: the body starts here
        word, end = found
        if not scan._ends_cleanly(end) and word in _KEYWORDS:
            raise scan.fail(f"{word!r} followed by an unexpected character", end)
        if word == "module" and first:
            module, scan.pos = True, end
        elif word == "prelude" and not imports and not prelude:
            prelude, scan.pos = True, end
        elif word == "import" or (word in _MODIFIERS and _leads_to_import(scan, word, end)):
            imports.append(_import(scan))
        else:
            _refuse_import_ahead(scan, repr(word), end)
            break
        first = False
    return Header(module=module, prelude=prelude, imports=tuple(imports), end=scan.pos)


def _leads_to_import(scan: _Scanner, word: str, end: int) -> bool:
    """`public`/`meta` start an import only when `import` follows (Lean backtracks otherwise)."""
    after = scan.peek_word_after(end)
    if word == "public" and after == "meta":
        after = scan.peek_word_after(scan.after(end) + len("meta"))
    return after == "import"


def _refuse_import_ahead(scan: _Scanner, what: str, end: int) -> None:
    """Reject the file when `import` follows `what` (a word or a doc comment) within the next
    few words or doc comments; a tab or an unterminated comment on the way is refused too."""
    position = end
    for _ in range(_LOOKAHEAD_WORDS):
        ahead = scan.after(position)
        doc = scan.doc_comment_end(ahead)
        if doc is not None:
            position = doc
            continue
        saved, scan.pos = scan.pos, ahead
        found = scan.word()
        scan.pos = saved
        if found is None:
            return
        if found[0] == "import":
            raise scan.fail(f"{what} before an import: a header the checker does not "
                            "understand")
        position = found[1]


def _import(scan: _Scanner) -> Import:
    flags = {"public": False, "meta": False, "all": False}
    while True:
        found = scan.word()
        if found is None:  # unreachable: only called at a word that leads to `import`
            raise scan.fail("an import that the checker cannot read")
        word, end = found
        scan.pos = end
        scan.skip()
        if word == "import":
            break
        flags[word] = True
    found = scan.word()
    if found is not None and found[0] == "all" and scan._ends_cleanly(found[1]):
        flags["all"] = True
        scan.pos = found[1]
        scan.skip()
    return Import(scan.module_name(), **flags)


def comment_end(text: str, pos: int) -> int | None:
    """The end of the comment at `pos` as Lean's ``finishCommentBlock`` reads it (None: never
    ends). After ``/-`` Lean consumes one more character, whatever it is, then ``/-`` opens and
    ``-/`` closes, leftmost first, so ``/-/- -/`` and ``/-/-/`` are whole comments and strings
    inside mean nothing. Each mark is found once: linear in the comment's length."""
    if text.startswith("--", pos):
        newline = text.find("\n", pos)
        return len(text) if newline < 0 else newline
    if not text.startswith("/-", pos):
        raise ValueError(f"no comment starts at offset {pos}")
    depth, scan = 1, pos + 3  # the character after `/-` is never part of a mark
    while depth:
        mark = _COMMENT_MARK.search(text, scan)
        if mark is None:
            return None
        depth += 1 if mark.group() == "/-" else -1
        scan = mark.end()
    return scan


def check_header(text: str) -> str | None:
    """None when the header of `text` is understood and plain, else why it is not."""
    try:
        parse_header(text)
    except HeaderError as exc:
        return str(exc)
    return None
