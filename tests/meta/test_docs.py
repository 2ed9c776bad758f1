"""The repository explains itself: every reference in its documents resolves inside it."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner
from support import REPO, doc_examples

from lean_eval.cli import main

DOCS = tuple(str(p.relative_to(REPO)) for p in
             [*doc_examples.documents(), REPO / "tests" / "standin" / "README.md"])
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


# Pages other branches of this session add; linked before they are merged (issue 32).
PENDING: set[str] = set()


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("name", DOCS)
def test_relative_links_resolve(name: str) -> None:
    path = REPO / name
    text = path.read_text(encoding="utf-8")
    for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)]*))?\)", text):
        if "://" in target:
            continue
        resolved = (path.parent / target).resolve() if target else path
        if str(resolved.relative_to(REPO)) in PENDING and not resolved.exists():
            continue
        assert resolved.exists(), f"{name} links to missing {target}"
        if anchor and resolved.suffix == ".md":
            prose = re.sub(r"^```.*?^```", "", resolved.read_text(encoding="utf-8"),
                           flags=re.M | re.S)
            anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", prose, re.M)}
            assert anchor in anchors, f"{name} links to {target}#{anchor}: no such heading"


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


def test_the_documents_are_laid_out_by_reader() -> None:
    """Issue 32 item 2: the README is what it is, the set-up, one run and where to go next; the
    rest is in docs/, one page per reader, each linked from the README."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300, "README.md grows back into a manual: move it to docs/"
    prose = re.sub(r"^```.*?^```", "", readme, flags=re.M | re.S)
    headings = re.findall(r"^## (.+)$", prose, re.M)
    assert headings == ["Set up on a fresh machine",
                        "Try it without Lean: one run, read end to end", "Where to go next",
                        "Development"], headings
    for page in ("submitting", "maintaining", "scale", "publishing", "commands", "api",
                 "development", "pipeline", "auditing"):
        assert f"(docs/{page}.md)" in readme, page
    assert "(SECURITY.md)" in readme


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
    assert CliRunner().invoke(main, [args[0], "--help"], catch_exceptions=False).exit_code == 0


# --- SECURITY.md names its tests by node id, and each one runs in CI ---------------------------

NODE_ID = re.compile(r"tests/((?:\w+/)?test_\w+\.py)::(test_\w+)")
BARE_NAME = re.compile(r"(?<![\w/:.])test_\w+")  # a test named without its file
LEAN_ONLY_NOTE = "(real Lean only)"  # written right after a node id whose test needs real Lean
# Marks that keep a test from running in CI. `skipif` is not one: its conditions are about the
# machine (Linux, a cgroup v2 group), which CI provides.
SKIPPING = {"skip", "xfail", "lean"}


def _marks(decorators: list[ast.expr]) -> set[str]:
    """The ``pytest.mark.<name>`` names among ``decorators`` (called or not)."""
    found = set()
    for decorator in decorators:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute)
                and target.value.attr == "mark"):
            found.add(target.attr)
    return found


def _collected(tests_dir: Path, file: str) -> dict[str, set[str]] | None:
    """The test functions pytest collects from ``tests_dir/file`` and their skipping marks
    (the module's ``pytestmark`` included); None when there is no such file."""
    path = tests_dir / file
    if not path.is_file():
        return None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_marks: set[str] = set()
    functions: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) \
                else [node.value]
            module_marks |= _marks(values)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.name.startswith("test"):
            functions[node.name] = _marks(node.decorator_list)
    return {name: (marks | module_marks) & SKIPPING for name, marks in functions.items()}


def security_reference_problems(text: str, tests_dir: Path) -> list[str]:
    """Why each test reference of SECURITY.md ``text`` does not hold: a bare name (not a node
    id), a node id whose file or function does not exist, or a test CI never runs (skipped,
    xfail, or real-Lean only without saying so)."""
    problems = []
    cache: dict[str, dict[str, set[str]] | None] = {}
    for match in NODE_ID.finditer(text):
        file, name = match.groups()
        node = match.group(0)
        collected = cache.setdefault(file, _collected(tests_dir, file))
        if collected is None:
            problems.append(f"{node}: tests/{file} does not exist")
        elif name not in collected:
            problems.append(f"{node}: tests/{file} defines no test function {name}")
        elif collected[name] - {"lean"}:
            problems.append(f"{node}: marked {sorted(collected[name])}, so CI does not run it")
        elif "lean" in collected[name] and not text[match.end():].lstrip("`").lstrip() \
                .startswith(LEAN_ONLY_NOTE):
            problems.append(f"{node}: runs only with real Lean; say {LEAN_ONLY_NOTE} after it")
    for match in BARE_NAME.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        where = sorted(f.relative_to(tests_dir).as_posix() for f in tests_dir.rglob("test_*.py")
                       if re.search(rf"^def {match.group(0)}\b",
                                    f.read_text(encoding="utf-8"), re.M))
        hint = f"write tests/{where[0]}::{match.group(0)}" if len(where) == 1 else \
            f"write it as tests/<file>.py::{match.group(0)} (defined in {where or 'no file'})"
        problems.append(f"SECURITY.md line {line}: bare test name {match.group(0)}; {hint}")
    return problems


def test_security_md_names_every_test_by_a_node_id_that_ci_runs() -> None:
    text = (REPO / "SECURITY.md").read_text(encoding="utf-8")
    assert len(NODE_ID.findall(text)) >= 90  # the references are there to be checked
    problems = security_reference_problems(text, REPO / "tests")
    assert not problems, "\n".join(problems)


def test_the_security_md_checker_reports_renamed_bare_missing_and_skipped_tests(
        tmp_path: Path) -> None:
    """Negative control of the test above, on a small tests directory of its own."""
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n\ndef test_kept():\n    pass\n\n\n@pytest.mark.skip(reason='x')\n"
        "def test_skipped():\n    pass\n\n\n@pytest.mark.lean\ndef test_lean():\n    pass\n")
    good = ("`tests/test_x.py::test_kept` and `tests/test_x.py::test_lean` "
            f"{LEAN_ONLY_NOTE}")
    assert security_reference_problems(good, tmp_path) == []
    text = ("`tests/test_x.py::test_renamed`, `tests/test_y.py::test_kept`, "
            "`tests/test_x.py::test_skipped`, `tests/test_x.py::test_lean` and `test_kept`")
    problems = security_reference_problems(text, tmp_path)
    assert problems == [
        "tests/test_x.py::test_renamed: tests/test_x.py defines no test function test_renamed",
        "tests/test_y.py::test_kept: tests/test_y.py does not exist",
        "tests/test_x.py::test_skipped: marked ['skip'], so CI does not run it",
        f"tests/test_x.py::test_lean: runs only with real Lean; say {LEAN_ONLY_NOTE} after it",
        "SECURITY.md line 1: bare test name test_kept; write tests/test_x.py::test_kept"]


# --- wording the code must keep true (issue: every documented claim holds) ---------------------

def test_bwrap_help_says_prepares_prefix_comes_before_path() -> None:
    result = CliRunner().invoke(main, ["run-eval", "--help"], catch_exceptions=False)
    help_text = re.sub(r"-\s+", "-", " ".join(result.output.split()))  # click wraps at "-"
    assert ("bubblewrap executable (default: the one `lean-eval prepare` installed, else bwrap "
            "on the filtered PATH)") in help_text


def _default_env_line() -> int:
    """The line of ``api.score`` that defaults ``env`` to the process environment."""
    source = (REPO / "lean_eval" / "api.py").read_text(encoding="utf-8").splitlines()
    (line,) = [n for n, text in enumerate(source, 1) if "os.environ if env is None" in text]
    return line


def test_only_the_cli_reads_the_environment() -> None:
    """Design §3: environment defaults are click's; no module outside lean_eval/cli reads
    os.environ (the probe scripts' command line is lean_eval/cli/probe_script.py), but for the
    API's one documented default: ``score``'s ``env`` is the process environment when not
    given."""
    readers = []
    for path in sorted((REPO / "lean_eval").rglob("*.py")):
        if path.parent.name == "cli":
            continue
        readers.extend(
            f"{path.relative_to(REPO)}:{node.lineno}"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "os" and node.attr in {"environ", "environb", "getenv"})
    assert readers == [f"lean_eval/api.py:{_default_env_line()}"]
    design = " ".join(DESIGN.read_text(encoding="utf-8").split())
    assert "Environment defaults are click `envvar=` settings" in design


# --- examples that run (docs/development.md, "Examples that run") -----------------------------

@pytest.mark.parametrize("name", DOCS)
def test_a_prompt_appears_only_in_console_blocks(name: str) -> None:
    """An example that shows a `$ ` prompt is a ```console block, which the suite runs
    (tests/e2e/test_doc_examples.py); any other block would show output nothing checks."""
    text = (REPO / name).read_text(encoding="utf-8")
    for block in doc_examples.blocks(text):
        if block.info == "console":
            assert doc_examples.examples(block), f"{name}:{block.line}: an empty console block"
            continue
        prompts = [block.line + n for n, line in enumerate(block.lines) if line.startswith("$ ")]
        assert not prompts, f"{name}:{prompts[0]}: a `$ ` prompt outside a ```console block"


def test_the_example_checker_fails_on_a_changed_output_and_accepts_what_varies() -> None:
    """Negative control of tests/e2e/test_doc_examples.py, without running anything."""
    block = next(doc_examples.blocks(
        "```console\n$ lean-eval verify out \\\n      --key k.pub; echo $?\n"
        "FAILED a.json: SHA-256 040b61b0... differs\n...\nverified in 0.4 s at "
        "2026-01-01T00:00:00Z\n1\n```\n"))
    (example,) = doc_examples.examples(block)
    assert example.command == "lean-eval verify out \\\n      --key k.pub; echo $?"
    printed = ("FAILED a.json: SHA-256 9f00aa11... differs\nmore\nlines\nverified in 12.5 s at "
               "2026-12-05T06:31:22+00:00\n1\n")
    assert doc_examples.mismatch("d.md", example, 0, printed, ()) is None
    changed = printed.replace("\n1\n", "\n2\n")
    problem = doc_examples.mismatch("d.md", example, 0, changed, ())
    assert problem is not None and problem.startswith("d.md:2: $ lean-eval verify out")
    assert "-1" in problem and "+2" in problem
    failed = doc_examples.mismatch("d.md", example, 1, printed, ())
    assert failed is not None and "exited 1" in failed
    paths = doc_examples.mismatch("d.md", example, 0, printed.replace("more", "/x/y/more"),
                                  (("/x/y", "/home/you/lean-eval"),))
    assert paths is None


def test_every_document_with_output_is_run_by_the_suite() -> None:
    """The README's walk-through and each reader's page show output that the suite runs."""
    shown = {str(p.relative_to(REPO)) for p in doc_examples.documents()
             if doc_examples.console_examples(p)}
    assert {"README.md", "docs/submitting.md", "docs/maintaining.md", "docs/scale.md",
            "docs/publishing.md"} <= shown, shown


# --- the command reference is generated (scripts/gen_command_reference.py) --------------------

def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_command_reference", REPO / "scripts" / "gen_command_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_command_reference_is_what_the_commands_help_says() -> None:
    generator = _generator()
    committed = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    diff = generator.stale(committed, generator.render())
    assert not diff, (f"docs/commands.md differs from the commands' --help; regenerate it with "
                      f"`{generator.COMMAND}`:\n{diff}")
    for name in generator.command_names():
        assert f"\n## `lean-eval {name}`\n" in committed, name
