"""The header check lexes comments exactly as Lean's parser does (issue 12 item 5).

``Lean.Parser.Basic``'s ``whitespace`` and ``finishCommentBlock`` are the rules: ``--`` runs to
the newline; ``/--`` and ``/-!`` are doc-comment tokens; after any other ``/-`` the parser
consumes one more character, whatever it is, before it scans the body, where ``-/`` closes and
``/-`` opens a nested comment (the pair is consumed, so its second character is never the start
of another mark); a tab or a lone carriage return is an error; anything else is a token.

The reference below is written from those rules alone, as a character-at-a-time state machine
(the product uses regular-expression searches), with the header grammar read from its token
list. It says either which modules Lean imports, or ``None`` when it cannot decide (an
unterminated comment, a tab, an escaped or unusual word where the header may continue, an
``import`` right after a doc comment or an unknown word). The product may refuse more than the
reference, never accept a header whose imports differ from the reference's, and always refuses
what the reference cannot decide.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from support import examples

from lean_eval.lean.declarations import strip_comments
from lean_eval.lean.header import HeaderError, check_header, comment_end, parse_header

# --- the reference ---------------------------------------------------------------------------

WORD_START = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_«")
WORD_REST = WORD_START | set("0123456789'!?.»")
PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_']*(?:\.[A-Za-z_][A-Za-z0-9_']*)*")
KEYWORDS = {"module", "prelude", "import", "public", "meta", "all"}
LOOKAHEAD = 3  # tokens after the end of the header in which an `import` is undecidable

Token = tuple[str, str]  # ("word" | "doc" | "other" | "error", text)


def _is_word_char(c: str, first: bool) -> bool:
    return c in (WORD_START if first else WORD_REST) or ord(c) > 0x7F


def reference_tokens(text: str) -> Iterator[Token]:
    """Lean's tokens of `text` with whitespace and comments dropped; lexing stops at an error."""
    state, depth, mark, doc, word = "code", 0, "", False, ""
    chars = iter(text)
    pending: list[str] = []  # a character to look at again in the state just entered
    while True:
        if pending:
            c = pending.pop()
        else:
            c = next(chars, "")
            if c == "":
                break
        if state == "code":
            if word and _is_word_char(c, first=False):
                word += c
                continue
            if word:
                yield "word", word
                word = ""
            if _is_word_char(c, first=True):
                word = c
            elif c == "/":
                state = "slash"
            elif c == "-":
                state = "dash"
            elif c == "\r":
                state = "cr"
            elif c == "\t":
                yield "error", "a tab"
                return
            elif c not in " \n":
                yield "other", c
        elif state == "cr":
            if c != "\n":
                yield "error", "a lone carriage return"
                return
            state = "code"
        elif state == "dash":
            if c == "-":
                state = "line"
            else:
                yield "other", "-"
                state = "code"
                pending.append(c)
        elif state == "line":
            if c == "\n":
                state = "code"
        elif state == "slash":
            if c == "-":
                state = "open"
            else:
                yield "other", "/"
                state = "code"
                pending.append(c)
        elif state == "open":  # `/-` seen: this character is consumed whatever it is
            doc = c in "-!"
            state, depth, mark = "block", 1, ""
        # block: a mark is a pair of characters, consumed together
        elif mark == "-" and c == "/":
            depth, mark = depth - 1, ""
            if depth == 0:
                state = "code"
                if doc:
                    yield "doc", ""
        elif mark == "/" and c == "-":
            depth, mark = depth + 1, ""
        else:
            mark = c if c in "-/" else ""
    if state in ("open", "block"):
        yield "error", "an unterminated comment"
    elif state == "cr":
        yield "error", "a lone carriage return"
    elif state in ("slash", "dash"):
        yield "other", "/" if state == "slash" else "-"
    elif word:
        yield "word", word


def reference_imports(text: str) -> tuple[str, ...] | None:
    """The modules Lean's header imports, or None when the reference cannot decide."""
    tokens = list(reference_tokens(text))

    def at(k: int) -> Token:
        return tokens[k] if k < len(tokens) else ("end", "")

    def plain(k: int, value: str | None = None) -> bool:
        kind, text = at(k)
        return kind == "word" and PLAIN.fullmatch(text) is not None and text == (value or text)

    def nothing_imported_after(k: int) -> bool:  # the header ended at token k
        for ahead in range(k + 1, k + 1 + LOOKAHEAD):
            kind, _ = at(ahead)
            if kind == "error" or plain(ahead, "import"):
                return False
            if kind != "doc" and not plain(ahead):
                return True
        return True

    imports: list[str] = []
    i = 1 if plain(0, "module") else 0
    i += 1 if plain(i, "prelude") else 0
    while True:
        kind, value = at(i)
        if kind == "error":
            return None
        if kind in ("end", "other"):
            return tuple(imports)
        if kind == "doc":
            return tuple(imports) if nothing_imported_after(i) else None
        if not plain(i):  # an escape, a non-ASCII letter, a `!`: only its start is known
            prefix = PLAIN.match(value)
            return None if prefix is None or prefix.group() in KEYWORDS else tuple(imports)
        j = i + (1 if plain(i, "public") else 0)
        j += 1 if plain(j, "meta") else 0
        if not plain(j, "import"):
            return tuple(imports) if nothing_imported_after(i) else None
        j += 1
        if plain(j, "all") and at(j + 1)[0] == "word":
            j += 1
        if not plain(j) or at(j)[1] in KEYWORDS:
            return None
        imports.append(at(j)[1])
        i = j + 1


def product_imports(text: str) -> tuple[str, ...] | None:
    try:
        return tuple(i.module for i in parse_header(text).imports)
    except HeaderError:
        return None


# --- fixed examples --------------------------------------------------------------------------

ISSUE_TRICK = "/-/- -/\nimport «..».«..».etc.passwd\n-- -/\n"


@pytest.mark.parametrize(("text", "lean_reads"), [
    (ISSUE_TRICK + "theorem t : True := trivial\n", None),  # an escaped import: refused
    ("/-/- -/\nimport LeanPool\n-- -/\n", ("LeanPool",)),
    ("/-/-/ import A", ("A",)),
    ("/-/-/-/ import A", ()),  # `-/` closes at 4, then `-/` is code: the header ends
    ("/- /- -/ import A", None),  # nested, never closed
    ("/-\n-/ import A", ("A",)),  # the consumed character may be a newline
    ("/-- doc -/ import A", None),  # a doc comment cannot precede the header
    ("/-! doc -/ import A", None),
    ("/---/ import A", None),  # a complete doc comment: `/--` then `-/`
    ("/- \"-/\" import A -/", ()),  # a string means nothing in a comment: `"` ends the header
    ("-- /-\nimport A", ("A",)),
    ("/- -- -/ import A", ("A",)),  # `--` means nothing in a block comment
    ("/- a --/ import A", ("A",)),
    ("/- -/-/ import A", ()),
    ("/-", None),
    ("/-/", None),
])
def test_fixed_examples_as_lean_reads_them(text: str, lean_reads: tuple[str, ...] | None
                                           ) -> None:
    assert reference_imports(text) == lean_reads, text
    assert product_imports(text) == lean_reads, text


def test_the_issue_trick_is_an_import_rejection_naming_the_hidden_line() -> None:
    message = check_header(ISSUE_TRICK + "theorem t : True := trivial\n")
    assert message is not None
    assert message.startswith("import header, line 2: module name '«..».«..».etc.passwd'")


def test_comment_end_follows_finish_comment_block() -> None:
    assert comment_end("/-/- -/ x", 0) == 7
    assert comment_end("/-/-/", 0) == 5
    assert comment_end("/- /- -/ -/", 0) == 11
    assert comment_end("/--/ -/", 0) == 7  # a doc comment: its body starts after `/--`
    assert comment_end("/-", 0) is None
    assert comment_end("-- a\nb", 0) == 4
    with pytest.raises(ValueError, match="no comment"):
        comment_end("x", 0)


def test_trusted_declarations_are_read_with_the_same_comments() -> None:
    """declarations.py blanks comments through header.py's lexer: a declaration after the
    trick is seen, one inside a real comment is not."""
    text = "/-/- -/\ntheorem seen : True := trivial\n-- -/\n/- /- -/ theorem hidden -/\n"
    stripped = strip_comments(text)
    assert "theorem seen" in stripped and "hidden" not in stripped
    assert stripped.count("\n") == text.count("\n")


# --- the property ----------------------------------------------------------------------------

FRAGMENTS = st.sampled_from([
    "/-", "-/", "/--", "/-!", "--", "-", "/", "/-/", "/-/-", "-/-/", "--/", "/-/-/", " ", " ",
    "\n", "\n", '"', '"-/"', "import ", "import", " A", "B.C", "«x»", "x!", "public ", "meta ",
    "all ", "module ", "prelude ", "x", "!", "\t", "\r\n", "\r", "\u2200", "theorem t := 1",
    "/- -/", "-- -/", "import «Evil»", "import all D ", "\u03b1"])
SOUP = st.lists(FRAGMENTS, max_size=8).map("".join)
IMPORT = st.builds(lambda lead, name: f"{lead}import {name}\n", st.sampled_from(["", "\n", " "]),
                   st.sampled_from(["A", "B.C", "«X»", "D'"]))
PIECES = st.one_of(
    IMPORT,
    SOUP,
    st.builds(lambda body: f"/-{body}-/", SOUP),
    st.builds(lambda body: f"--{body}\n", SOUP),
    st.builds(lambda a, b: f"/-{a}/-{b}-/{a}-/", SOUP, SOUP),
    IMPORT,
)
TRICKS = st.sampled_from(["/-/- -/", "/-/-/", "/-/", "-/", "/-", "/--", "/-!", "--", "\n", " "])
COMMENTISH = st.one_of(
    TRICKS,
    st.builds(lambda body: f"/-{body}-/", SOUP),
    st.builds(lambda body: f"--{body}\n", SOUP),
)
TEXTS = st.one_of(
    st.lists(PIECES, max_size=6).map("".join),  # anything at all
    st.lists(st.one_of(IMPORT, COMMENTISH), max_size=8).map("".join),  # mostly header-shaped
)


@settings(max_examples=examples(800), deadline=None)
@given(TEXTS)
def test_the_check_never_accepts_imports_lean_would_read_differently(text: str) -> None:
    reference, product = reference_imports(text), product_imports(text)
    event("reference undecided" if reference is None else
          f"reference reads {min(len(reference), 2)}{'+' if len(reference) > 1 else ''} "
          "import(s)")
    event("product refuses" if product is None else "product accepts")
    if product is not None:
        assert reference is not None, (text, product)
        assert product == reference, text
    if reference is None:
        assert product is None, text


# Well-formed comments (closed as the reference lexes them) between plain imports: the product
# must accept these and read exactly the imports written, whatever the comments hold.
BODY_CHARS = st.sampled_from(["/", "-", " ", "a", '"', "\n", "«", "import B ", "!", "\t", "\r",
                              "\u2200", "-/", "/-", "--"])


def _one_whole_comment(text: str) -> bool:
    return not list(reference_tokens(text))  # no token and no error: nothing but comments


def closed_comment(first: str, body: list[str]) -> str:
    """`/-` `first` `body`, cut where the reference sees it close, or closed with `-/`s."""
    text = "/-" + first + "".join(body)
    for end in range(3, len(text) + 1):
        if _one_whole_comment(text[:end]):
            return text[:end]
    for depth in range(1, len(text)):
        if _one_whole_comment(closed := f"{text} {'-/' * depth}"):
            return closed
    raise AssertionError(text)


COMMENT = st.one_of(
    st.builds(closed_comment, st.sampled_from(["/", " ", "\n", "a", "/", "\t", "*"]),
              st.lists(BODY_CHARS, max_size=10)),
    st.builds(lambda body: "--" + "".join(body).replace("\n", "") + "\n",
              st.lists(BODY_CHARS, max_size=6)),
)
GAP = st.lists(st.one_of(st.sampled_from([" ", "\n"]), COMMENT), min_size=1, max_size=3).map(
    lambda parts: " " + "".join(parts) + " ")
NAMES = st.sampled_from(["A", "Mathlib.Tactic", "Submission.Helpers", "b_1", "c'"])
TAILS = st.sampled_from(["", "theorem t : True := trivial\n", "/-- doc -/\ndef x := 1\n",
                         "namespace Submission\nend Submission\n"])


@st.composite
def plain_headers(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    names = tuple(draw(st.lists(NAMES, max_size=4)))
    text = draw(GAP) + "".join(f"import{draw(GAP)}{name}{draw(GAP)}" for name in names)
    return text + "\n" + draw(TAILS), names


@settings(max_examples=examples(200), deadline=None)
@given(plain_headers())
def test_imports_between_any_well_formed_comments_are_read_exactly(
        case: tuple[str, tuple[str, ...]]) -> None:
    text, names = case
    assert reference_imports(text) == names, text
    assert product_imports(text) == names, (text, check_header(text))
