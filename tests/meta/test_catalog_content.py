"""Consistency of the committed starter benchmark: problems/, workspaces/, examples/.

Standard library (and tomllib) only; this module deliberately does not import ``lean_eval``, so
it checks the trusted content independently of the harness that consumes it.

The last group of tests re-implements the stand-in toolchain's text model of design §7
(declarations at line starts; statement = text between the name and the first ``:=`` outside
brackets, whitespace collapsed; ``namespace Submission`` scoping) and checks, for every hole,
that the challenge, the bridge, the starter and the example submissions agree with it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess  # noqa: TID251  (runs scripts/update_index.py --check as a real child process)
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lean_eval.benchmark.catalog import STARTER_FILES, TRUSTED_FILES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 uses the backport declared in pyproject.toml
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS_DIR = ROOT / "problems"
WORKSPACES_DIR = ROOT / "workspaces"
EXAMPLES_DIR = ROOT / "examples" / "submissions"
UPDATE_INDEX = ROOT / "scripts" / "update_index.py"

TOOLCHAIN = "leanprover/lean4:v4.35.0\n"
EXPECTED_IDS = {"two_plus_two", "add_comm_explicit", "double_def", "widget_instance", "multi_hole"}

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{0,127}$")
REQUIRED_KEYS = {
    "id",
    "title",
    "status",
    "visible",
    "statement_revision",
    "tags",
    "holes",
    "submitter",
}
OPTIONAL_KEYS = {"notes", "source"}
HOLE_KINDS = {"theorem", "def", "instance"}
REQUIRED_TRUSTED = TRUSTED_FILES
STARTER = STARTER_FILES
PERMITTED_AXIOMS = ["propext", "Quot.sound", "Classical.choice"]
FORBIDDEN_TOKENS = ("sorry", "admit", "native_decide")

PROBLEM_IDS = sorted(p.stem for p in PROBLEMS_DIR.glob("*.toml"))


# --------------------------------------------------------------------------------------------
# helpers


def load_problem(pid: str) -> dict[str, Any]:
    with (PROBLEMS_DIR / f"{pid}.toml").open("rb") as fh:
        return tomllib.load(fh)


def holes_of(pid: str) -> list[tuple[str, str]]:
    return [(h["name"], h["kind"]) for h in load_problem(pid)["holes"]]


def _reject_constant(token: str) -> None:
    raise ValueError(f"non-standard JSON constant {token}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    dupes = {k for k in keys if keys.count(k) > 1}
    if dupes:
        raise ValueError(f"duplicate keys {sorted(dupes)}")
    return dict(pairs)


def strict_json(path: Path) -> Any:
    return json.loads(
        path.read_text(encoding="utf-8"),
        object_pairs_hook=_no_duplicates,
        parse_constant=_reject_constant,
    )


def run_update_index(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(UPDATE_INDEX), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# --------------------------------------------------------------------------------------------
# the design §7 text model, re-implemented

DECL_RE = re.compile(
    r"^(?:@\[[^\]]*\]\s*)*"
    r"(?:(?:noncomputable|protected|private|partial|unsafe|nonrec)\s+)*"
    r"(theorem|lemma|def|abbrev|instance|axiom)\s+([^\s:({\[⟨]+)"
)
BOUNDARY_RE = re.compile(r"^(end|namespace|section)(\s|$)")
TOKEN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_'.!?]*")
OPEN_BRACKETS = "([{⟨"
CLOSE_BRACKETS = ")]}⟩"


@dataclass(frozen=True)
class Decl:
    keyword: str
    name: str  # fully qualified by the enclosing namespaces
    attributes: str  # the text before the keyword
    statement: str  # whitespace-collapsed
    body: str
    file: str


def strip_comments(text: str) -> str:
    """Blank out ``--`` and (nested) ``/- -/`` comments, keeping line structure."""
    out: list[str] = []
    i, depth, n = 0, 0, len(text)
    while i < n:
        two = text[i : i + 2]
        if depth == 0 and two == "--":
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
        elif two == "/-":
            depth += 1
            out.append("  ")
            i += 2
        elif depth > 0 and two == "-/":
            depth -= 1
            out.append("  ")
            i += 2
        elif depth > 0:
            out.append("\n" if text[i] == "\n" else " ")
            i += 1
        else:
            out.append(text[i])
            i += 1
    assert depth == 0, "unterminated block comment"
    return "".join(out)


def split_statement(text: str) -> tuple[str, str]:
    depth = 0
    for i, ch in enumerate(text):
        if ch in OPEN_BRACKETS:
            depth += 1
        elif ch in CLOSE_BRACKETS:
            depth -= 1
        elif depth == 0 and text.startswith(":=", i):
            return text[:i], text[i + 2 :]
    return text, ""


def parse_decls(path: Path) -> list[Decl]:
    lines = strip_comments(path.read_text(encoding="utf-8")).splitlines()
    scopes: list[tuple[str, str]] = []  # ("namespace" | "section", name)
    decls: list[Decl] = []
    current: tuple[str, str, str, str, list[str]] | None = None  # keyword, name, attrs, ns, text

    def flush() -> None:
        nonlocal current
        if current is not None:
            keyword, name, attrs, ns, chunks = current
            statement, body = split_statement("\n".join(chunks))
            full = f"{ns}.{name}" if ns else name
            decls.append(Decl(keyword, full, attrs, " ".join(statement.split()), body, path.name))
        current = None

    for line in lines:
        match = DECL_RE.match(line)
        if match:
            flush()
            ns = ".".join(n for kind, n in scopes if kind == "namespace" and n)
            attrs = line[: match.start(1)].strip()
            current = (match.group(1), match.group(2), attrs, ns, [line[match.end(2) :]])
            continue
        boundary = BOUNDARY_RE.match(line)
        if boundary:
            flush()
            word, rest = boundary.group(1), line[boundary.end(1) :].strip()
            if word in {"namespace", "section"}:
                scopes.append((word, rest))
            else:
                assert scopes, f"{path}: `end` without an open scope"
                kind, name = scopes.pop()
                assert name == rest, f"{path}: `end {rest}` closes {kind} {name!r}"
            continue
        if current is not None:
            current[4].append(line)
    flush()
    assert not scopes, f"{path}: unclosed scopes {scopes}"
    return decls


def submitted_decls(submission_dir: Path) -> dict[str, Decl]:
    """All declarations of ``Submission.lean`` and ``Submission/**/*.lean``, by full name."""
    files = [submission_dir / "Submission.lean"]
    files += sorted((submission_dir / "Submission").rglob("*.lean"))
    found: dict[str, Decl] = {}
    for path in files:
        if path.is_file():
            for decl in parse_decls(path):
                assert decl.name not in found, f"{path}: {decl.name} declared twice"
                found[decl.name] = decl
    return found


def used_decls(decls: dict[str, Decl], targets: list[str]) -> list[Decl]:
    """Targets plus every declaration whose name appears in the body of a used one."""
    by_short: dict[str, list[str]] = {}
    for full in decls:
        by_short.setdefault(full.rsplit(".", 1)[-1], []).append(full)
    seen: list[str] = []
    todo = [t for t in targets if t in decls]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        for token in TOKEN_RE.findall(decls[name].body):
            candidates = [token, *by_short.get(token.rsplit(".", 1)[-1], [])]
            todo.extend(c for c in candidates if c in decls and c not in seen)
    return [decls[n] for n in seen]


def challenge_decls(pid: str) -> dict[str, Decl]:
    return {d.name: d for d in parse_decls(WORKSPACES_DIR / pid / "Challenge.lean")}


KIND_KEYWORDS = {
    "theorem": {"theorem", "lemma"},
    "def": {"def", "abbrev"},
    "instance": {"instance"},
}


def kind_keyword(kind: str) -> set[str]:
    return KIND_KEYWORDS[kind]


def statement_mismatches(pid: str, submission_dir: Path) -> list[str]:
    """The text-model reasons this submission would not match the challenge, hole by hole."""
    challenge = challenge_decls(pid)
    submitted = submitted_decls(submission_dir)
    problems: list[str] = []
    for name, kind in holes_of(pid):
        target = submitted.get(f"Submission.{name}")
        if target is None:
            problems.append(f"{name}: missing")
        elif target.keyword not in kind_keyword(kind):
            problems.append(f"{name}: declared with `{target.keyword}`, the hole is a {kind} hole")
        elif target.statement != challenge[name].statement:
            problems.append(f"{name}: {target.statement!r} != {challenge[name].statement!r}")
    return problems


def illegal_axioms(pid: str, submission_dir: Path) -> list[str]:
    submitted = submitted_decls(submission_dir)
    targets = [f"Submission.{name}" for name, _ in holes_of(pid)]
    found: list[str] = []
    for decl in used_decls(submitted, targets):
        if decl.keyword == "axiom":
            found.append(f"{decl.name}: is an axiom")
        tokens = set(TOKEN_RE.findall(decl.body))
        found += [f"{decl.name}: uses {tok}" for tok in FORBIDDEN_TOKENS if tok in tokens]
    return found


def imports_of(path: Path) -> list[str]:
    text = strip_comments(path.read_text(encoding="utf-8"))
    return [m.group(1) for m in re.finditer(r"^import\s+(\S+)", text, re.MULTILINE)]


# --------------------------------------------------------------------------------------------
# root pins


def test_catalog_has_the_starter_problems() -> None:
    assert set(PROBLEM_IDS) == EXPECTED_IDS
    workspace_ids = {p.name for p in WORKSPACES_DIR.iterdir() if p.is_dir()}
    assert workspace_ids == EXPECTED_IDS


def test_root_pins() -> None:
    assert (ROOT / "lean-toolchain").read_bytes() == TOOLCHAIN.encode()
    with (ROOT / "lakefile.toml").open("rb") as fh:
        lakefile = tomllib.load(fh)
    assert lakefile["name"] == "lean_eval_benchmark"
    assert not lakefile.get("lean_lib")  # the root project only carries pins
    manifest = strict_json(ROOT / "lake-manifest.json")
    assert set(manifest) == {"version", "packagesDir", "packages", "name", "lakeDir"}
    assert manifest["version"] == "1.1.0"
    assert manifest["name"] == "lean_eval_benchmark"
    assert manifest["packagesDir"] == ".lake/packages"
    assert manifest["lakeDir"] == ".lake"
    pinned = {req["name"] for req in lakefile.get("require", [])}
    assert {pkg["name"] for pkg in manifest["packages"]} == pinned


# --------------------------------------------------------------------------------------------
# problems/<id>.toml


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_problem_manifest(pid: str) -> None:
    data = load_problem(pid)
    assert data.keys() >= REQUIRED_KEYS, REQUIRED_KEYS - data.keys()
    assert data.keys() <= REQUIRED_KEYS | OPTIONAL_KEYS, data.keys() - REQUIRED_KEYS - OPTIONAL_KEYS
    assert data["id"] == pid
    assert ID_RE.match(pid)
    assert isinstance(data["title"], str)
    assert data["title"].strip()
    assert data["status"] == "active"
    assert data["visible"] is True
    assert type(data["statement_revision"]) is int
    assert data["statement_revision"] >= 1
    assert isinstance(data["tags"], list)
    assert all(isinstance(t, str) for t in data["tags"])
    assert data["submitter"] == "lean-eval maintainers"
    for key in OPTIONAL_KEYS & data.keys():
        assert isinstance(data[key], str)
    holes = data["holes"]
    assert isinstance(holes, list)
    assert holes
    for hole in holes:
        assert set(hole) == {"name", "kind"}, hole
        assert hole["kind"] in HOLE_KINDS
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_']*", hole["name"])
    names = [h["name"] for h in holes]
    assert len(names) == len(set(names))


# --------------------------------------------------------------------------------------------
# workspaces/<id>/


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_workspace_files_present(pid: str) -> None:
    ws = WORKSPACES_DIR / pid
    for rel in (*REQUIRED_TRUSTED, *STARTER):
        path = ws / rel
        assert not path.is_symlink(), f"{pid}: {rel}"
        assert path.is_file(), f"{pid}: {rel}"
        raw = path.read_bytes()
        raw.decode("utf-8")
        assert b"\r" not in raw, f"{pid}/{rel}: CRLF line endings"
        assert raw.endswith(b"\n"), f"{pid}/{rel}: no final newline"


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_workspace_readme_names_every_hole(pid: str) -> None:
    readme = (WORKSPACES_DIR / pid / "README.md").read_text(encoding="utf-8")
    assert readme.startswith(f"# `{pid}`: ")
    for name, kind in holes_of(pid):
        assert f"| `{name}` | {kind} |" in readme
    assert f"lean-eval start-problem {pid} " in readme
    assert f"lean-eval test submission/{pid} " in readme


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_workspace_toolchain_identical_to_root(pid: str) -> None:
    root_bytes = (ROOT / "lean-toolchain").read_bytes()
    assert (WORKSPACES_DIR / pid / "lean-toolchain").read_bytes() == root_bytes


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_workspace_config(pid: str) -> None:
    config = strict_json(WORKSPACES_DIR / pid / "config.json")
    holes = holes_of(pid)
    theorems = [n for n, k in holes if k == "theorem"]
    definitions = [n for n, k in holes if k != "theorem"]
    expected_keys = {
        "challenge_module",
        "solution_module",
        "theorem_names",
        "permitted_axioms",
        "enable_nanoda",
    }
    if definitions:
        expected_keys.add("definition_names")
    assert set(config) == expected_keys
    assert config["challenge_module"] == "Challenge"
    assert config["solution_module"] == "Solution"
    assert config["theorem_names"] == theorems
    if definitions:
        assert config["definition_names"] == definitions
    assert config["permitted_axioms"] == PERMITTED_AXIOMS
    assert config["enable_nanoda"] is False


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_workspace_lake_files(pid: str) -> None:
    ws = WORKSPACES_DIR / pid
    with (ws / "lakefile.toml").open("rb") as fh:
        lakefile = tomllib.load(fh)
    with (ROOT / "lakefile.toml").open("rb") as fh:
        root_lakefile = tomllib.load(fh)
    assert lakefile["name"] == pid
    assert lakefile.get("require", []) == root_lakefile.get("require", [])
    libs = {lib["name"]: lib for lib in lakefile["lean_lib"]}
    expected = {"Challenge", "Solution", "Submission"}
    if (ws / "ChallengeDeps.lean").exists():
        expected.add("ChallengeDeps")
    assert set(libs) == expected
    assert libs["Submission"].get("globs") == ["Submission", "Submission.+"]
    # never make untrusted code a default target of a trusted workspace
    assert not {"Solution", "Submission"} & set(lakefile.get("defaultTargets", []))

    manifest = strict_json(ws / "lake-manifest.json")
    root_manifest = strict_json(ROOT / "lake-manifest.json")
    assert manifest == {**root_manifest, "name": pid}


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_workspace_imports(pid: str) -> None:
    ws = WORKSPACES_DIR / pid
    deps = (ws / "ChallengeDeps.lean").exists()
    assert imports_of(ws / "Challenge.lean") == (["ChallengeDeps"] if deps else [])
    assert "Submission" in imports_of(ws / "Solution.lean")
    assert "Challenge" not in imports_of(ws / "Solution.lean")
    assert "Submission.Helpers" in imports_of(ws / "Submission.lean")
    if deps:
        assert imports_of(ws / "ChallengeDeps.lean") == []
        assert "ChallengeDeps" in imports_of(ws / "Submission.lean")


# --------------------------------------------------------------------------------------------
# workspaces/index.json and scripts/update_index.py


def test_index_is_current() -> None:
    result = run_update_index("--check")
    assert result.returncode == 0, result.stderr


def test_index_covers_every_trusted_and_starter_file() -> None:
    index = strict_json(WORKSPACES_DIR / "index.json")
    assert index["schema_version"] == 1
    assert set(index["problems"]) == set(PROBLEM_IDS)
    for pid, entry in index["problems"].items():
        ws = WORKSPACES_DIR / pid
        trusted = set(REQUIRED_TRUSTED)
        if (ws / "ChallengeDeps.lean").exists():
            trusted.add("ChallengeDeps.lean")
        assert set(entry) == {"trusted", "starter"}
        assert set(entry["trusted"]) == trusted
        assert set(entry["starter"]) == set(STARTER)
        for group in ("trusted", "starter"):
            for rel, digest in entry[group].items():
                assert hashlib.sha256((ws / rel).read_bytes()).hexdigest() == digest, rel


def _copy_benchmark(dest: Path) -> Path:
    for rel in ("problems", "workspaces", "scripts"):
        shutil.copytree(ROOT / rel, dest / rel, ignore=shutil.ignore_patterns(".*"))
    return dest


def test_index_check_names_a_tampered_file(tmp_path: Path) -> None:
    bench = _copy_benchmark(tmp_path / "bench")
    challenge = bench / "workspaces" / "two_plus_two" / "Challenge.lean"
    challenge.write_text(challenge.read_text() + "\ntheorem extra : True := trivial\n")
    result = run_update_index("--root", str(bench), "--check")
    assert result.returncode == 1
    assert "workspaces/two_plus_two/Challenge.lean (trusted): digest differs" in result.stderr

    # regenerating makes it current again, and the rewrite is deterministic
    assert run_update_index("--root", str(bench)).returncode == 0
    first = (bench / "workspaces" / "index.json").read_bytes()
    assert run_update_index("--root", str(bench), "--check").returncode == 0
    assert run_update_index("--root", str(bench)).returncode == 0
    assert (bench / "workspaces" / "index.json").read_bytes() == first


def test_index_check_reports_missing_and_extra_entries(tmp_path: Path) -> None:
    bench = _copy_benchmark(tmp_path / "bench")
    index_path = bench / "workspaces" / "index.json"
    index = json.loads(index_path.read_text())
    del index["problems"]["double_def"]["trusted"]["config.json"]
    index["problems"]["double_def"]["starter"]["Submission/Extra.lean"] = "0" * 64
    index_path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    result = run_update_index("--root", str(bench), "--check")
    assert result.returncode == 1
    assert "workspaces/double_def/config.json (trusted): not in the index" in result.stderr
    assert "workspaces/double_def/Submission/Extra.lean (starter): in the index" in result.stderr


def test_index_layout_errors(tmp_path: Path) -> None:
    bench = _copy_benchmark(tmp_path / "bench")
    (bench / "workspaces" / "multi_hole" / "Solution.lean").unlink()
    (bench / "workspaces" / "multi_hole" / "notes.txt").write_text("stray\n")
    result = run_update_index("--root", str(bench), "--check")
    assert result.returncode == 2
    assert "workspaces/multi_hole/Solution.lean: missing" in result.stderr
    assert "workspaces/multi_hole/notes.txt: not a trusted or starter file" in result.stderr


# --------------------------------------------------------------------------------------------
# Lean content under the design §7 text model


def test_text_model_parser_self_check(tmp_path: Path) -> None:
    """Negative control: the re-implemented model tells matching from non-matching text."""
    lean = tmp_path / "Submission.lean"
    lean.write_text(
        "/- a comment mentioning theorem fake : False := x -/\n"
        "namespace Submission\n\n"
        "/-- doc -/\n"
        "@[reducible] noncomputable def f (n : Nat)\n    : Nat := n -- trailing comment\n"
        "theorem t (a : Nat) : f (a + 0) = [a].length * a := by\n  simp [f]\n"
        "end Submission\n"
        "theorem outside : True := trivial\n"
    )
    decls = {d.name: d for d in parse_decls(lean)}
    assert set(decls) == {"Submission.f", "Submission.t", "outside"}
    assert decls["Submission.f"].statement == "(n : Nat) : Nat"
    assert decls["Submission.f"].attributes == "@[reducible] noncomputable"
    assert decls["Submission.t"].statement == "(a : Nat) : f (a + 0) = [a].length * a"
    assert "simp [f]" in decls["Submission.t"].body


LEAN_FILES = sorted(
    p.relative_to(ROOT).as_posix()
    for base in (WORKSPACES_DIR, EXAMPLES_DIR)
    for p in base.rglob("*.lean")
)


@pytest.mark.parametrize("rel", LEAN_FILES)
def test_no_comment_line_looks_like_a_declaration(rel: str) -> None:
    """Robustness: a comment line never starts with a declaration or scope keyword.

    The text model ignores comments, but keeping them free of such lines means a model that
    got comment handling subtly wrong would still read these files the same way.
    """
    raw = (ROOT / rel).read_text(encoding="utf-8").splitlines()
    stripped = strip_comments("\n".join(raw)).splitlines()
    for number, (line, code) in enumerate(zip(raw, stripped, strict=True), start=1):
        if DECL_RE.match(line) or BOUNDARY_RE.match(line):
            assert code == line, f"{rel}:{number}: comment line reads as a declaration"


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_challenge_declares_every_hole(pid: str) -> None:
    challenge = challenge_decls(pid)
    for name, kind in holes_of(pid):
        decl = challenge.get(name)
        assert decl is not None, f"{pid}: hole {name} not declared at top level"
        assert decl.keyword in kind_keyword(kind)
        assert decl.statement
        assert "\n" not in decl.statement
        expected_body = "by sorry" if kind == "theorem" else "sorry"
        assert " ".join(decl.body.split()) == expected_body, f"{pid}: {name}"


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_solution_bridges_every_hole(pid: str) -> None:
    challenge = challenge_decls(pid)
    solution = {d.name: d for d in parse_decls(WORKSPACES_DIR / pid / "Solution.lean")}
    assert set(solution) == {name for name, _ in holes_of(pid)}
    for name, kind in holes_of(pid):
        bridge = solution[name]
        assert bridge.keyword == challenge[name].keyword, name
        assert bridge.statement == challenge[name].statement, name
        assert re.search(rf"(?<![\w.])Submission\.{re.escape(name)}(?![\w'])", bridge.body), name
        body = " ".join(bridge.body.split())
        if kind == "theorem":
            assert body.startswith(f"by exact Submission.{name}"), body
        else:
            assert bridge.attributes == "@[reducible] noncomputable", name
        assert not set(TOKEN_RE.findall(bridge.body)) & set(FORBIDDEN_TOKENS)


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_starter_matches_challenge(pid: str) -> None:
    ws = WORKSPACES_DIR / pid
    assert statement_mismatches(pid, ws) == []
    submitted = submitted_decls(ws)
    assert set(submitted) == {f"Submission.{name}" for name, _ in holes_of(pid)}
    for name, kind in holes_of(pid):
        body = " ".join(submitted[f"Submission.{name}"].body.split())
        assert body == ("by sorry" if kind == "theorem" else "sorry")


@pytest.mark.parametrize("pid", PROBLEM_IDS)
def test_correct_example_matches_and_is_clean(pid: str) -> None:
    example = EXAMPLES_DIR / "correct" / pid
    assert (example / "Submission.lean").is_file(), f"no correct example for {pid}"
    assert statement_mismatches(pid, example) == []
    assert illegal_axioms(pid, example) == []
    starter = (WORKSPACES_DIR / pid / "Submission.lean").read_bytes()
    assert (example / "Submission.lean").read_bytes() != starter
    # every import resolves to a trusted module of the workspace or a file the example ships
    has_deps = (WORKSPACES_DIR / pid / "ChallengeDeps.lean").exists()
    trusted_modules = {"ChallengeDeps"} if has_deps else set()
    for lean in [example / "Submission.lean", *sorted((example / "Submission").rglob("*.lean"))]:
        for module in imports_of(lean):
            shipped = example / (module.replace(".", "/") + ".lean")
            assert module in trusted_modules or shipped.is_file(), f"{lean}: import {module}"


def test_incorrect_two_plus_two_uses_sorry_with_the_right_statement() -> None:
    example = EXAMPLES_DIR / "incorrect" / "two_plus_two"
    assert statement_mismatches("two_plus_two", example) == []
    assert illegal_axioms("two_plus_two", example) == ["Submission.two_plus_two: uses sorry"]
    starter = (WORKSPACES_DIR / "two_plus_two" / "Submission.lean").read_bytes()
    assert (example / "Submission.lean").read_bytes() != starter  # not skipped as `unchanged`


def test_incorrect_add_comm_explicit_changes_the_statement() -> None:
    example = EXAMPLES_DIR / "incorrect" / "add_comm_explicit"
    mismatches = statement_mismatches("add_comm_explicit", example)
    assert len(mismatches) == 1
    assert mismatches[0].startswith("add_comm_explicit: ")
    assert illegal_axioms("add_comm_explicit", example) == []
    starter = (WORKSPACES_DIR / "add_comm_explicit" / "Submission.lean").read_bytes()
    assert (example / "Submission.lean").read_bytes() != starter


def test_example_layout_and_readme() -> None:
    assert {p.name for p in (EXAMPLES_DIR / "correct").iterdir()} == set(PROBLEM_IDS)
    assert {p.name for p in (EXAMPLES_DIR / "incorrect").iterdir()} == {
        "two_plus_two",
        "add_comm_explicit",
    }
    for path in EXAMPLES_DIR.rglob("*"):
        if path.is_file() and path.name != "README.md":
            rel = path.relative_to(EXAMPLES_DIR)
            assert path.suffix == ".lean", rel
            assert rel.parts[2] in {"Submission.lean", "Submission"}, rel
    readme = (EXAMPLES_DIR / "README.md").read_text(encoding="utf-8")
    for pid in PROBLEM_IDS:
        assert f"correct/{pid}/Submission.lean" in readme
    for code in ("accepted", "statement_mismatch", "illegal_axiom"):
        assert code in readme
