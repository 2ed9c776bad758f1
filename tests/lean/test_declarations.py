"""One definition of a declaration's statement, shared by validate-catalog and the stand-in.

``lean_eval.lean.declarations`` (read by ``validate-catalog``) and the stand-in toolchain's
``standin.elab.parse_declarations`` (its model of Lean elaboration, which runs inside the
sandbox under ``/usr/bin/python3 -IS`` with only its own library and so cannot import the
harness) are two implementations of the one model in the ``declarations`` module docstring.
Rather than have the stand-in import the harness (which would make the test model agree with
the checker by construction, so a checker bug could never show up as a stand-in rejection),
these tests generate Lean sources with a known answer and require both to give that answer.
"""

# ruff: noqa: RUF001  (Lean statements use the Unicode letters Mathlib writes)
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import examples

from lean_eval.lean.declarations import declarations, split_statement

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "standin" / "toolchain" / "lib"))
from standin import elab

MODELLED = {"theorem", "lemma", "def", "abbrev", "instance", "axiom"}


def checker(text: str) -> list[tuple[str, str]]:
    return [(d.name, d.statement) for d in declarations(text) if d.keyword in MODELLED]


def standin(text: str) -> list[tuple[str, str]]:
    return [(d["name"], d["type"]) for d in elab.parse_declarations(text)]


def both(text: str) -> list[tuple[str, str]]:
    mine, theirs = checker(text), standin(text)
    assert mine == theirs, (mine, theirs)
    return mine


# --------------------------------------------------------------------------------------------
# examples, Mathlib-style statements written for these tests

def test_named_arguments_and_structure_instances_are_part_of_the_statement() -> None:
    text = ("theorem scaled_eq (r : ℝ) (f : ℝ → ℝ) (h : HasDerivAt f (r := r) 0) :\n"
            "    mk { value := 0, scale := r } = mk { value := 0, scale := r } := by\n"
            "  sorry\n")
    assert both(text) == [("scaled_eq", "(r : ℝ) (f : ℝ → ℝ) (h : HasDerivAt f (r := r) 0) : "
                                        "mk { value := 0, scale := r } = "
                                        "mk { value := 0, scale := r }")]
    mutated = text.replace("(r := r)", "(r := r + 1)")
    assert both(mutated) != both(text)


def test_where_and_alternatives_end_the_statement() -> None:
    text = ("instance instWidgetInhabited : Inhabited Widget where\n"
            "  default := ⟨1⟩\n"
            "def pred' : ℕ → ℕ\n"
            "  | 0 => 0\n"
            "  | n + 1 => n\n"
            "theorem abs_nonneg' (x : ℝ) : 0 ≤ |x| := abs_nonneg x\n")
    assert both(text) == [("instWidgetInhabited", ": Inhabited Widget"),
                          ("pred'", ": ℕ → ℕ"),
                          ("abs_nonneg'", "(x : ℝ) : 0 ≤ |x|")]


def test_scopes_modifiers_attributes_and_prefixes() -> None:
    text = ("import Mathlib\n\nopen Real\n\nnoncomputable section\n\nnamespace Alpha.Beta\n\n"
            "/-- A docstring with `:=` and `where` in it. -/\n"
            "@[simp, norm_cast (attr := simp)]\n"
            "protected theorem one : f (x := 1) = 1 := by\n  sorry\n\n"
            "public section\n"
            "  private noncomputable def two : ℕ := 2\n"
            "end\n\n"
            "open Filter in\n"
            "instance (priority := 100) three : Fact (1 < 3) := ⟨by norm_num⟩\n"
            "set_option maxHeartbeats 400000 in\n"
            "lemma four : \"a := b\" = \"a := b\" ∧ '(' = '(' := ⟨rfl, rfl⟩\n"
            "theorem _root_.five : True := trivial\n"
            "axiom six : 6 = 6\n"
            "variable (n : ℕ)\n"
            "end Alpha.Beta\n\nend\n\ntheorem seven : True := trivial\n")
    assert both(text) == [("Alpha.Beta.one", ": f (x := 1) = 1"),
                          ("Alpha.Beta.two", ": ℕ"),
                          ("Alpha.Beta.three", ": Fact (1 < 3)"),
                          ("Alpha.Beta.four", ": \"a := b\" = \"a := b\" ∧ '(' = '('"),
                          ("five", ": True"),
                          ("Alpha.Beta.six", ": 6 = 6"),
                          ("seven", ": True")]


def test_a_comment_separates_tokens_and_is_never_part_of_a_statement() -> None:
    text = "theorem t (a : ℕ)/- := -/(b : ℕ) -- := trailing\n  : a = a := rfl\n"
    assert both(text) == [("t", "(a : ℕ) (b : ℕ) : a = a")]


def test_split_statement_keeps_identifiers_containing_where() -> None:
    assert split_statement(" : somewhere = elsewhere' := x")[0] == " : somewhere = elsewhere' "


# --------------------------------------------------------------------------------------------
# generated sources with a known answer

IDENT = st.sampled_from(["foo", "bar_baz", "x₁", "α'", "Nat.succ", "h", "where_ok", "inst"])
ATOM = st.one_of(
    IDENT,
    st.sampled_from(["(r := r)", "{ value := 0 }", "⟨a, b⟩", "[Fintype α]", "{n : ℕ}",
                     "⦃x y : ℝ⦄", '"s := t"', "'('", "|x|", "(f (x := 1))", "0", "→", "="]),
)
STATEMENT = st.lists(ATOM, min_size=1, max_size=6).map(lambda parts: ": " + " ".join(parts))
BODY = st.sampled_from([":= by\n  sorry", ":= sorry", ":=\n  Submission.foo x",
                        "where\n  default := 0", ":= ⟨1, 2⟩"])
KEYWORD = st.sampled_from(["theorem", "lemma", "def", "abbrev", "instance"])
PREFIX = st.sampled_from(["", "@[simp] ", "@[reducible, to_additive (attr := simp)] ",
                          "noncomputable ", "private ", "protected ", "open Real in ",
                          "set_option linter.unusedVariables false in "])
LEADING = st.sampled_from(["", "/-- doc := where -/\n", "@[simp]\n", "open Foo in\n",
                           "-- a comment := here\n"])
SCOPE = st.sampled_from([("namespace", "Alpha"), ("namespace", "B.C"), ("section", ""),
                         ("noncomputable section", ""), ("public section", "")])


@st.composite
def sources(draw: Any) -> tuple[str, list[tuple[str, str]]]:
    lines: list[str] = ["import Mathlib", ""]
    expected: list[tuple[str, str]] = []
    scopes: list[tuple[str, str]] = []
    for index in range(draw(st.integers(1, 8))):
        action = draw(st.sampled_from(["decl", "decl", "open", "close"]))
        if action == "open":
            kind, label = draw(SCOPE)
            scopes.append((kind, label))
            lines.append(f"{kind} {label}".rstrip())
            continue
        if action == "close" and scopes:
            kind, label = scopes.pop()
            lines.append(f"end {label}".rstrip())
            continue
        name = f"d{index}"
        keyword, statement = draw(KEYWORD), draw(STATEMENT)
        indent = draw(st.sampled_from(["", "  "]))
        lines.append(draw(LEADING) + indent + draw(PREFIX) + f"{keyword} {name}")
        lines.append(f"    {statement} {draw(BODY)}")
        namespace = ".".join(label for kind, label in scopes if kind == "namespace")
        expected.append((f"{namespace}.{name}" if namespace else name, statement))
        lines.append("")
    lines.extend(f"end {label}".rstrip() for _, label in reversed(scopes))
    return "\n".join(lines) + "\n", expected


@settings(max_examples=examples(300), deadline=None)
@given(sources())
def test_both_models_find_every_generated_statement(source: tuple[str, list[tuple[str, str]]]
                                                    ) -> None:
    text, expected = source
    assert both(text) == expected


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abtheorm :=()[]{}⟨⟩|\"'-/\n wherdfn@")),
               max_size=200))
def test_both_models_agree_on_arbitrary_text(text: str) -> None:
    both(text)


@pytest.mark.parametrize("keyword", ["structure", "class", "inductive", "opaque"])
def test_unmodelled_declarations_end_the_previous_one(keyword: str) -> None:
    text = f"axiom a : P\n{keyword} Widget : Type\ntheorem t : Q := sorry\n"
    assert both(text) == [("a", ": P"), ("t", ": Q")]
    assert [d.name for d in declarations(text)] == ["a", "Widget", "t"]
