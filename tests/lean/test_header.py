"""Import header check (design §4.3): comments, keywords and module names, fail-closed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import examples

from lean_eval.lean.header import Import, check_header, parse_header

NAMES = st.lists(st.sampled_from(["Submission", "Helpers", "Mathlib", "A", "b_1", "c'", "_x",
                                  "Tactic", "Deep"]), min_size=1, max_size=3).map(".".join)
BLOCK_BODY = st.lists(st.sampled_from([" a ", " import «Evil» ", " a -", "-", " /x ", " - ", "",
                                       " ∀ x, ", "\n", "\t", " « ", "--", " --", "!"]),
                      max_size=5).map("".join)
LINE_BODY = st.sampled_from(["", " a", " import «Evil»", "-", " -/", " /- x", "\t", " ∀ «»"])


def _block(body: str) -> str:
    text = f"/-{body}-/"
    return text if not text.startswith(("/--", "/-!")) else f"/- {body}-/"


GAP_PIECES = st.one_of(
    st.sampled_from([" ", "\n", "\r\n", "  \n  "]),
    st.builds(lambda body: f"--{body}\n", LINE_BODY),
    st.builds(_block, BLOCK_BODY),
    st.builds(lambda a, b: f"/- {a} /- {b} -/ -/", BLOCK_BODY, BLOCK_BODY),
    st.just("/- a --/"),
)
GAP = st.lists(GAP_PIECES, max_size=3).map("".join)
SEP = st.lists(GAP_PIECES, min_size=1, max_size=3).map(lambda xs: " " + "".join(xs))
BODIES = st.sampled_from([
    "", "theorem x : True := trivial\n", "/-- doc -/\ndef x := 1\nimport «Evil»\n",
    "/-! module doc -/\ndef y := 2\n", "namespace Submission\nend Submission\n",
    "@[simp] theorem y : True := trivial", "#eval 1", "public def z := 1", "meta def q := 1",
    "(1 : Nat)", "set_option maxHeartbeats 0 in\nexample : True := trivial", "import.x",
    "modules", "all_goals", "publicity", "'a'"])
MODIFIERS = st.sampled_from([(), ("public",), ("meta",), ("public", "meta")])


@st.composite
def headers(draw: st.DrawFn, odd_name: str | None = None) -> tuple[str, list[Import], int]:
    """A header with random comments and whitespace, its imports, and the odd import's index."""
    parts = [draw(GAP)]
    if draw(st.booleans()):
        parts += ["module", draw(SEP)]
    if draw(st.booleans()):
        parts += ["prelude", draw(SEP)]
    imports: list[Import] = []
    count = draw(st.integers(0, 4))
    odd_at = draw(st.integers(0, max(count - 1, 0))) if odd_name else -1
    for i in range(count):
        mods, all_ = draw(MODIFIERS), draw(st.booleans())
        for word in (*mods, "import", *(["all"] if all_ else [])):
            parts += [word, draw(SEP)]
        name = odd_name if i == odd_at and odd_name else draw(NAMES)
        parts += [name, draw(SEP) if i < count - 1 else draw(GAP)]
        imports.append(Import(name, "public" in mods, "meta" in mods, all_))
    body = draw(BODIES)
    if body and parts[-1] == "":
        parts.append("\n")
    return "".join(parts) + body, imports, odd_at


@settings(max_examples=examples(400), deadline=None)
@given(headers())
def test_generated_headers_are_read_exactly(case: tuple[str, list[Import], int]) -> None:
    text, imports, _ = case
    header = parse_header(text)
    assert list(header.imports) == imports, text
    assert check_header(text) is None


ODD_NAMES = ["«Evil»", "A.«B»", "«Submission».Helpers", "A.", "A.1", "A!", "A?", "\u03b1",
             "A.\u03b2", "«../../etc»", "A.«B».C", "Foo«x»", "A..B", "public"]


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(ODD_NAMES).flatmap(headers))
def test_odd_module_names_reject_the_file(case: tuple[str, list[Import], int]) -> None:
    text, imports, odd_at = case
    message = check_header(text)
    if odd_at < 0 or not imports:
        return
    assert message is not None, text
    assert message.startswith("import header, line "), message


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet=st.sampled_from(list("impotrpublicmeta all«»./-!\n\r\t -AZ_'ü")),
               max_size=60))
def test_arbitrary_text_only_ever_passes_or_is_refused(text: str) -> None:
    message = check_header(text)
    assert message is None or message.startswith("import header, line ")
    if message is None:
        for item in parse_header(text).imports:
            assert all(part and (part[0].isalpha() or part[0] == "_") and part.isascii()
                       for part in item.module.split("."))


@pytest.mark.parametrize(("text", "imports"), [
    ("import Submission.Helpers\n\nnamespace Submission", ["Submission.Helpers"]),
    ("/- a --/ import A", ["A"]),
    ("/- /- nested -/ import «X» -/ import B", ["B"]),
    ("--c\nimport A--c\nimport B/- c -/import C", ["A", "B", "C"]),
    ("module\npublic meta import all A.B\npublic def x := 1", ["A.B"]),
    ("prelude\nimport Init", ["Init"]),
    ("/-- doc -/ theorem t : True := trivial\nimport «X»", []),
    ("/-! doc -/\ndef x := 1", []),
    ("import A\n/-- doc -/\ntheorem t : True := trivial", ["A"]),
    ("/-/-/ import A", ["A"]),  # one comment: `/-` swallows the `/`, `-/` ends it
    ("/-/- -/\nimport A\n-- -/", ["A"]),
    ("/- /-/ -/ -/ import A", ["A"]),  # a `/-` inside the body does nest
    ("public section\ntheorem t : True := trivial", []),
    ("meta def m := 1", []),
    ("import A\r\nimport B", ["A", "B"]),
    ("", []),
])
def test_examples(text: str, imports: list[str]) -> None:
    assert [i.module for i in parse_header(text).imports] == imports


@pytest.mark.parametrize(("text", "fragment"), [
    ("import «Evil»", "module name '«Evil»'"),
    ("import Submission.«Helpers»", "module name 'Submission.«Helpers»'"),
    ("public import«Evil»", "'import' followed by an unexpected character"),
    ("public meta import A.«B»", "module name 'A.«B»'"),
    ("import all «X»", "module name '«X»'"),
    ("import A.", "module name 'A.'"),
    ("import\tA", "a tab"),
    ("import A\rimport B", "carriage return"),
    ("\ufeffimport A", "U+FEFF"),
    ("/- never closed\nimport A", "unterminated block comment"),
    ("import A\n/- x /- y -/\nimport B", "unterminated block comment"),
    ("import", "without a module name"),
    ("«weird» := 1", "U+00AB"),  # fail-closed: nothing non-ASCII where an import may stand
    ("private import «X»", "'private' before an import"),
    ("/-- doc -/ import «X»", "a doc comment before an import"),
    ("/-! doc -/\nimport A", "line 1: a doc comment before an import"),
    ("/-/- -/\nimport «..».«..».etc.passwd\n-- -/", "line 2: module name '«..».«..».etc"),
    ("/-/-/ import «X»", "module name '«X»'"),
    ("/-", "unterminated block comment"),
    ("/-x", "unterminated block comment"),
    ("import A\nfoo\tbar", "a tab"),  # inside the look-ahead after the header: fail closed
    ("import A\nprivate meta import B", "line 2: 'private' before an import"),
    ("public section\nimport «X»", "'public' before an import"),
    ("import A\nimport B\nimport C.«D»", "line 3"),
])
def test_refusals_name_the_line_and_the_reason(text: str, fragment: str) -> None:
    message = check_header(text)
    assert message is not None and fragment in message, message


def test_long_comments_are_read_in_linear_time() -> None:
    """A quadratic comment scan would not finish within the test timeout on these."""
    unterminated = "/- " * 400_000
    assert "unterminated block comment" in (check_header(unterminated) or "")
    nested = "/- " * 300_000 + " import «X» " + "-/ " * 300_000 + "\nimport A"
    assert [i.module for i in parse_header(nested).imports] == ["A"]
    lines = "-- import «X»\n" * 100_000 + "import A\n"
    assert [i.module for i in parse_header(lines).imports] == ["A"]
