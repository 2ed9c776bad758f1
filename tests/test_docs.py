"""The repository explains itself: every reference in its documents resolves inside it."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from conftest import REPO

from lean_eval.cli import main

DOCS = ("README.md", "SECURITY.md", "tests/standin/README.md", "examples/submissions/README.md",
        "docs/design.md", "docs/benchmarks.md")
DESIGN = REPO / "docs" / "design.md"
SECTION_REF = re.compile(r"(?:docs/design\.md\)?,?|\bdesign)\s+§(\d+(?:\.\d+)?)")


def _design_sections() -> set[str]:
    text = DESIGN.read_text(encoding="utf-8")
    found = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", text, re.M))
    invariants = text.split("## 6. ", 1)[1].split("\n## ", 1)[0]
    found |= {f"6.{n}" for n in re.findall(r"^(\d+)\. ", invariants, re.M)}
    return found


@pytest.mark.parametrize("name", DOCS)
def test_documents_cite_nothing_outside_the_repository(name: str) -> None:
    text = (REPO / name).read_text(encoding="utf-8")
    assert "/work/" not in text and "../shared" not in text
    assert not re.search(r"\bSPEC\b", text), "cite docs/design.md, not SPEC"


@pytest.mark.parametrize("name", DOCS)
def test_relative_links_resolve(name: str) -> None:
    path = REPO / name
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
        if "://" in target:
            continue
        assert (path.parent / target).exists(), f"{name} links to missing {target}"


def test_every_design_section_cited_anywhere_exists() -> None:
    sections = _design_sections()
    assert {"1", "3", "4.3", "5.4", "5.5", "6.5", "6.13", "7", "8", "9"} <= sections
    cited: dict[str, set[str]] = {}
    files = [*REPO.glob("*.md"), *REPO.glob("docs/*.md"), *REPO.glob("lean_eval/**/*.py"),
             *REPO.glob("tests/**/*.py"), *REPO.glob("tests/**/*.md"), *REPO.glob("scripts/*"),
             *REPO.glob("benchmarks/*.py"), *REPO.glob("examples/**/*.md")]
    for path in files:
        if path.is_file():
            for ref in SECTION_REF.findall(path.read_text(encoding="utf-8", errors="replace")):
                cited.setdefault(ref, set()).add(str(path.relative_to(REPO)))
    missing = {ref: where for ref, where in cited.items() if ref not in sections}
    assert not missing, f"docs/design.md has no such section: {missing}"


def test_no_code_comment_cites_the_old_spec() -> None:
    offenders = []
    for path in [*REPO.glob("lean_eval/**/*.py"), *REPO.glob("tests/**/*.py"),
                 *REPO.glob("scripts/*.py"), *REPO.glob("benchmarks/*.py")]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bSPEC (§|section )", line):
                offenders.append(f"{path.relative_to(REPO)}:{number}")
    assert not offenders, offenders


def test_security_md_says_how_to_report_and_where_the_bwrap_floor_comes_from() -> None:
    text = (REPO / "SECURITY.md").read_text(encoding="utf-8")
    report = text.split("## Reporting a vulnerability", 1)[1]
    assert "privately" in report and "not a public issue" in report
    for needed in ("lean-eval --version", "bubblewrap", "minimal submission", "invariant"):
        assert needed in report
    floor = text.split("## The bubblewrap version floor", 1)[1].split("\n## ", 1)[0]
    assert "MIN_VERSION" in floor and "CVE-2026-87766" in floor and "0.12.0" in floor


def test_readme_says_distributions_ship_old_bwrap_and_documents_the_test_location() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "Distributions ship bubblewrap older than the scoring floor" in text
    assert "scripts/install_bwrap.sh" in text and "0.8.0" in text
    development = text.split("## Development", 1)[1]
    assert "LEAN_EVAL_TEST_OUTSIDE" in development and "/srv/lean-eval-tests" in development


def test_example_command_runs_as_written() -> None:
    text = (REPO / "examples" / "submissions" / "README.md").read_text(encoding="utf-8")
    (command,) = re.findall(r"```sh\n(lean-eval .*?)\n```", text)
    args = command.split()[1:]
    assert "--out" in args
    with main.make_context("lean-eval", list(args)) as ctx:
        sub = main.get_command(ctx, args[0])
        assert sub is not None
        sub_ctx = sub.make_context(args[0], args[1:], parent=ctx)
    for submission in sub_ctx.params["submissions"]:
        assert (REPO / submission).is_dir()
    assert CliRunner().invoke(main, [args[0], "--help"]).exit_code == 0
