"""scripts/action_pin_audit.py: the project's workflows pass; every mutable selector is reported
with its exact ``file:line: kind``, whether zizmor or our own rules find it; a file zizmor cannot
load fails the audit; usage errors exit 2.

The audit runs as a separate process (``sys.executable``), exactly as CI runs it. The fixtures
checked one by one (each bad fixture, in the fixtures directory; each mutation of the good one)
are audited together, in one run per test session that every xdist worker shares
(``batch_audit``); each test reads the findings of its own file from it.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import subprocess  # noqa: TID251 - the audit is a standalone script, run as CI runs it
import sys
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "action_pin_audit.py"
FIXTURES = REPO / "tests" / "fixtures" / "workflows"
GOOD = FIXTURES / "good.yml"


class Audit(NamedTuple):
    returncode: int
    stdout: str
    stderr: str

    @property
    def reported(self) -> list[str]:
        """``path:line: kind`` of every finding line."""
        return [":".join(line.split(":")[:3]) for line in self.stdout.splitlines()]


def audit(*args: str | Path, cwd: Path = REPO, env: dict[str, str] | None = None) -> Audit:
    done = subprocess.run((sys.executable, str(SCRIPT), *map(str, args)), cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=150, check=False)
    return Audit(done.returncode, done.stdout, done.stderr)


def batch_audit(factory: pytest.TempPathFactory, name: str,
                files: dict[str, str] | list[Path], *args: str | Path) -> tuple[Audit, list[Path]]:
    """One audit of many files, run once per session by whichever xdist worker needs it first
    (the others wait on a lock and read its record): ``files`` are paths, or names and texts
    written to a directory every worker sees."""
    shared = factory.getbasetemp().parent / f"pin-audit-{name}"
    shared.mkdir(exist_ok=True)
    paths = files if isinstance(files, list) else [shared / n for n in files]
    record = shared / "audit.json"
    with (shared / "lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not record.exists():
            if isinstance(files, dict):
                for path, text in zip(paths, files.values(), strict=True):
                    path.write_text(text, encoding="utf-8")
            record.write_text(json.dumps(audit(*paths, *args)), encoding="utf-8")
    return Audit(*json.loads(record.read_text(encoding="utf-8"))), paths


def own(result: Audit, path: Path) -> list[str]:
    """The findings of ``path`` in a batch audit, as ``reported``."""
    return [line for line in result.reported if line.startswith(f"{path}:")]


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("action_pin_audit", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


# ---------------------------------------------------------------- the repository's own workflows


def test_repository_workflows_pass() -> None:
    result = audit()
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("action_pin_audit: OK:"), result.stdout


def test_repository_workflows_pass_from_any_directory(tmp_path: Path) -> None:
    assert audit(cwd=tmp_path).returncode == 0


def test_project_ci_installs_and_runs_what_the_issue_asks() -> None:
    ci = (REPO / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    for needed in ("runs-on: ubuntu-24.04", "permissions:\n  contents: read",
                   "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683",
                   "actions/setup-python@0b93645e9fea7318ecaed2b359559ac225c90a2b",
                   'python-version: "3.11.9"', "sha256sum --check",
                   "--default-toolchain none", 'toolchain install "$(cat lean-toolchain)"',
                   'scripts/install_bwrap.sh --prefix /opt/lean-eval-bwrap',
                   "python -m pip install -e '.[dev]'", "bash scripts/run_tests.sh",
                   "lean-eval probe --bwrap /opt/lean-eval-bwrap/bin/bwrap",
                   "lean-eval check-comparator-installation", "lean-eval check-eval-workflow",
                   "python scripts/action_pin_audit.py"):
        assert needed in ci, needed
    assert "-latest" not in ci and "@main" not in ci and "@v" not in ci


# ---------------------------------------------------------------- fixtures


def test_good_fixture_passes() -> None:
    result = audit(GOOD)
    assert result.returncode == 0, result.stdout
    assert result.stdout.startswith("action_pin_audit: OK: 1 file(s), 7 uses:")


# fixture -> the exact (line, kind) of every finding, in file order.
BAD: dict[str, list[tuple[int, str]]] = {
    "bad_action_tag.yml": [(7, "action-tag")],
    "bad_action_branch.yml": [(8, "action-branch")],
    "bad_action_short_sha.yml": [(8, "action-short-sha")],
    # zizmor refuses a `uses:` without @ref (the file is then unaudited by it); our rule names it.
    "bad_action_no_ref.yml": [(4, "zizmor-load-failure"), (7, "action-no-ref")],
    "bad_python_version_wildcard.yml": [(9, "language-version")],
    "bad_python_version_minor.yml": [(9, "language-version")],
    "bad_python_version_latest.yml": [(9, "language-version")],
    "bad_version_range.yml": [(8, "language-version"), (12, "language-version")],
    "bad_node_version_lts.yml": [(9, "language-version")],
    "bad_go_version_stable.yml": [(4, "language-version")],
    "bad_go_install_latest.yml": [(9, "go-install"), (11, "go-install")],
    "bad_docker_tag.yml": [(7, "docker-unpinned")],
    "bad_container_tag.yml": [(6, "docker-unpinned"), (9, "docker-unpinned")],
    "bad_reusable_workflow_branch.yml": [(5, "reusable-workflow-branch")],
    "bad_reusable_workflow_tag.yml": [(5, "reusable-workflow-tag")],
    "bad_reusable_workflow_short_sha.yml": [(5, "reusable-workflow-short-sha")],
    "bad_reusable_workflow_no_ref.yml": [(4, "zizmor-load-failure"),
                                         (5, "reusable-workflow-no-ref")],
    "bad_zizmor_load_failure.yml": [(4, "zizmor-load-failure")],
    "bad_runner_latest.yml": [(5, "runner-latest"), (11, "runner-latest")],
    "bad_elan_toolchain.yml": [(8, "elan-toolchain"), (9, "elan-toolchain")],
    "bad_elan_init.yml": [(8, "mutable-url"), (8, "elan-toolchain")],
    "bad_pip_vcs.yml": [(8, "pip-vcs"), (9, "pip-vcs")],
    "bad_curl_pipe.yml": [(8, "mutable-url"), (9, "mutable-url"), (10, "mutable-url")],
}


def test_every_bad_fixture_is_listed() -> None:
    assert sorted(p.name for p in FIXTURES.glob("bad_*.yml")) == sorted(BAD)


def test_every_kind_has_a_bad_fixture() -> None:
    kinds = {kind for findings in BAD.values() for _, kind in findings}
    assert kinds == set(load_script().KINDS)


@pytest.fixture
def fixtures_audit(tmp_path_factory: pytest.TempPathFactory) -> Audit:
    """The fixtures directory (good.yml and every bad fixture) in one audit."""
    return batch_audit(tmp_path_factory, "fixtures", [FIXTURES])[0]


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_fixture_reports_each_selector_at_its_line(fixtures_audit: Audit, name: str) -> None:
    path = FIXTURES / name
    result = fixtures_audit
    assert result.returncode == 1, result.stdout + result.stderr
    assert own(result, path) == [f"{path}:{line}: {kind}" for line, kind in BAD[name]]
    for line in result.stdout.splitlines():
        if line.startswith(f"{path}:"):
            assert line.split(": ", 2)[2].strip(), line  # every finding says what is wrong
    assert "mutable selector(s)" in result.stderr


def test_all_fixtures_at_once_report_every_finding(fixtures_audit: Audit) -> None:
    result = fixtures_audit
    assert result.returncode == 1
    expected = [f"{FIXTURES / name}:{line}: {kind}"
                for name in sorted(BAD) for line, kind in BAD[name]]
    assert result.reported == expected


def test_finding_texts_name_the_selector(fixtures_audit: Audit) -> None:
    def out(name: str) -> str:
        return "".join(line + "\n" for line in fixtures_audit.stdout.splitlines()
                       if line.startswith(f"{FIXTURES / name}:"))

    assert out("bad_action_tag.yml") == (
        f"{FIXTURES / 'bad_action_tag.yml'}:7: action-tag: action "
        "`actions/checkout@v4` is pinned to tag `v4`, which can be moved; pin the "
        "full 40-hex commit SHA (zizmor unpinned-uses)\n")
    assert "`python-version: 3.x`" in out("bad_python_version_wildcard.yml")
    assert "`@latest`" in out("bad_go_install_latest.yml")
    assert "`master`" in out("bad_elan_init.yml")


# ---------------------------------------------------------------- every pinned construct is read

# (pinned text in good.yml, its mutable replacement, the kind reported at that text's line)
MUTATIONS = [
    ("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683", "actions/checkout@v4.2.2",
     "action-tag"),
    ('"actions/setup-python@0b93645e9fea7318ecaed2b359559ac225c90a2b"',
     '"actions/setup-python@v5"', "action-tag"),
    ("'actions/setup-node@1e60f620b9541d16bece96c5465dc8ee9832be0b'",
     "'actions/setup-node@main'", "action-branch"),
    ("actions/setup-go@0a12ed9d6a96ab950c8f026ed9f722fe0da7ef32", "actions/setup-go@0a12ed9",
     "action-short-sha"),
    ("go-version: 1.22.5}", "go-version: 1.x}", "language-version"),
    ("docker://alpine:3.20@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
     "docker://alpine:3.20", "docker-unpinned"),
    ('"python:3.11.9-slim@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"',
     '"python:3.11.9-slim"', "docker-unpinned"),
    ("redis@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", "redis:7",
     "docker-unpinned"),
    ('os: [ubuntu-22.04, "ubuntu-24.04"]', 'os: [ubuntu-22.04, "ubuntu-latest"]',
     "runner-latest"),
    ("runs-on: ubuntu-24.04", "runs-on: [self-hosted, ubuntu-latest]", "runner-latest"),
    ("'3.11.9', 3.12.4]", "'3.11', 3.12.4]", "language-version"),
    ('- "22.4.0"', '- "22"', "language-version"),
    ('java-version: "21.0.2+13"', 'java-version: "21"', "language-version"),
    ('NODE_VERSION: "20.11.1"', 'NODE_VERSION: "20.x"', "language-version"),
    ("ELAN_VERSION: v4.2.4", "ELAN_VERSION: latest", "language-version"),
    ('default: "3.11.9"', 'default: "3.11"', "language-version"),
    ("goimports@v0.22.0", "goimports@latest", "go-install"),
    ("gen@v1.2.3", "gen@main", "go-install"),
    ("staticcheck@0123456789abcdef0123456789abcdef01234567", "staticcheck@0123456", "go-install"),
    ("org/tool@0123456789abcdef0123456789abcdef01234567", "org/tool@main", "pip-vcs"),
    ("releases/download/${ELAN_VERSION}/", "releases/latest/download/", "mutable-url"),
    ("repo/0123456789abcdef0123456789abcdef01234567/install.sh", "repo/master/install.sh",
     "mutable-url"),
    ("--default-toolchain none", "--default-toolchain stable", "elan-toolchain"),
    ("./elan-init -y --no-modify-path --default-toolchain none", "./elan-init -y",
     "elan-toolchain"),
    ("leanprover/lean4:v4.35.0-rc2", "leanprover/lean4:nightly", "elan-toolchain"),
    ("elan default leanprover/lean4:v4.35.0", "elan default stable", "elan-toolchain"),
    ("rustup toolchain install 1.79.0", "rustup toolchain install stable", "language-version"),
    ("reusable.yml@0123456789abcdef0123456789abcdef01234567", "reusable.yml@v1",
     "reusable-workflow-tag"),
]


@pytest.fixture
def mutated_audit(tmp_path_factory: pytest.TempPathFactory) -> tuple[Audit, list[Path]]:
    """Each mutation of good.yml in a file of its own (``mutated-<index>.yml``), all in one
    audit."""
    text = GOOD.read_text(encoding="utf-8")
    return batch_audit(tmp_path_factory, "mutated", {
        f"mutated-{index}.yml": text.replace(pinned, mutable)
        for index, (pinned, mutable, _) in enumerate(MUTATIONS)}, "--root", REPO)


@pytest.mark.parametrize(("pinned", "mutable", "kind"), MUTATIONS,
                         ids=[f"{k}:{m[:40]}" for _, m, k in MUTATIONS])
def test_each_pinned_construct_of_the_good_fixture_is_checked(
        mutated_audit: tuple[Audit, list[Path]], pinned: str, mutable: str, kind: str) -> None:
    text = GOOD.read_text(encoding="utf-8")
    assert text.count(pinned) == 1, pinned
    line = text[:text.index(pinned)].count("\n") + 1
    result, paths = mutated_audit
    target = paths[MUTATIONS.index((pinned, mutable, kind))]
    assert target.read_text(encoding="utf-8") == text.replace(pinned, mutable)
    assert result.returncode == 1
    assert own(result, target) == [f"{target}:{line}: {kind}"], result.stdout
    assert len(result.reported) == len(MUTATIONS)  # one finding per file, none elsewhere


# ---------------------------------------------------------------- lean-toolchain and version files


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


READS_TOOLCHAIN = """on: push
jobs:
  build:
    runs-on: ubuntu-24.04
    steps:
      - run: elan toolchain install "$(cat lean-toolchain)"
      - uses: actions/setup-python@0b93645e9fea7318ecaed2b359559ac225c90a2b
        with:
          python-version-file: .python-version
"""


def test_lean_toolchain_read_is_checked_against_the_checkout(tmp_path: Path) -> None:
    workflow = write(tmp_path / ".github" / "workflows" / "ci.yml", READS_TOOLCHAIN)
    write(tmp_path / "lean-toolchain", "leanprover/lean4:v4.35.0\n")
    write(tmp_path / ".python-version", "3.11.9\n")
    assert audit(workflow).returncode == 0

    write(tmp_path / "lean-toolchain", "leanprover/lean4:stable\n")
    write(tmp_path / ".python-version", "3.11\n")
    result = audit(workflow)
    assert result.reported == [f"{workflow}:6: elan-toolchain", f"{workflow}:9: language-version"]
    assert "holds `leanprover/lean4:stable`" in result.stdout


def test_root_option_chooses_the_checkout(tmp_path: Path) -> None:
    workflow = write(tmp_path / "wf.yml", READS_TOOLCHAIN)
    checkout = tmp_path / "checkout"
    write(checkout / "lean-toolchain", "leanprover/lean4:v4.35.0\n")
    write(checkout / ".python-version", "3.11.9\n")
    assert audit(workflow, "--root", checkout).returncode == 0
    result = audit(workflow, "--root", tmp_path)  # neither file there: cannot be verified
    assert result.reported == [f"{workflow}:6: elan-toolchain", f"{workflow}:9: language-version"]


# ---------------------------------------------------------------- parsing details


def test_comments_prose_and_heredocs_are_not_selectors(tmp_path: Path) -> None:
    workflow = write(tmp_path / "wf.yml", """name: runs on ubuntu-latest  # display only
on: push
jobs:
  build:
    name: "Test (ubuntu-latest, python 3.x)"
    if: matrix.os != 'ubuntu-latest'
    runs-on: ubuntu-24.04  # not ubuntu-latest
    steps:
      # - uses: actions/checkout@v4
      - name: docs
        run: |
          # go install x@latest
          echo "uses: actions/checkout@v4"
          cat <<'EOF'
          go install example.com/x@latest
          curl https://example.com/master/x.sh | sh
          EOF
""")
    result = audit(workflow)
    assert result.returncode == 0, result.stdout


def test_block_scalar_versions_and_multiline_flow_lists(tmp_path: Path) -> None:
    workflow = write(tmp_path / "wf.yml", """on: push
jobs:
  build:
    runs-on: ubuntu-24.04
    strategy:
      matrix:
        python-version: [
          "3.11.9",
          "3.12"
        ]
    steps:
      - uses: actions/setup-python@0b93645e9fea7318ecaed2b359559ac225c90a2b
        with:
          python-version: |
            3.11.9
            3.x
""")
    result = audit(workflow)
    assert result.reported == [f"{workflow}:9: language-version",
                               f"{workflow}:16: language-version"]


def test_anchors_aliases_and_step_after_block_scalar(tmp_path: Path) -> None:
    workflow = write(tmp_path / "wf.yml", """on: push
jobs:
  build:
    runs-on: ubuntu-24.04
    steps:
      - run: |
          echo one
        name: after the block
      - uses: actions/checkout@v4
      - uses: actions/setup-python@0b93645e9fea7318ecaed2b359559ac225c90a2b
        with:
          python-version: &py "3.11.9"
      - uses: actions/setup-python@0b93645e9fea7318ecaed2b359559ac225c90a2b
        with:
          python-version: *py
""")
    result = audit(workflow)
    assert result.reported == [f"{workflow}:9: action-tag"]


COMPOSITE = """name: setup
runs:
  using: composite
  steps:
    - uses: actions/cache@v4
"""


def test_composite_action_files_are_audited_too(tmp_path: Path) -> None:
    action = write(tmp_path / ".github" / "actions" / "setup" / "action.yml", COMPOSITE)
    result = audit(action)
    assert result.reported == [f"{action}:5: action-tag"]
    # zizmor knows an action by its name: any other name cannot be loaded, which is a finding
    other = write(tmp_path / "setup.yml", COMPOSITE)
    assert audit(other).reported == [f"{other}:1: zizmor-load-failure"]


# -------------------------------------------------------- zizmor: pinned, strict, not silenced

PERMISSIVE = """rules:
  unpinned-uses:
    config:
      policies:
        "*": any
  unpinned-images:
    disable: true
"""


def test_zizmor_is_a_pinned_test_dependency() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert f'"zizmor=={load_script().ZIZMOR_VERSION}"' in pyproject


def test_ignore_comments_and_other_zizmor_configs_silence_nothing(tmp_path: Path) -> None:
    workflow = write(tmp_path / ".github" / "workflows" / "ci.yml", """on: push
jobs:
  build:
    runs-on: ubuntu-24.04
    container: python:3.11.9-slim  # zizmor: ignore[unpinned-images]
    steps:
      - uses: actions/checkout@v4  # zizmor: ignore[unpinned-uses]
""")
    for config in (tmp_path / "zizmor.yml", tmp_path / ".github" / "zizmor.yml"):
        write(config, PERMISSIVE)  # where zizmor would discover a configuration by itself
    env = {**os.environ, "ZIZMOR_CONFIG": str(tmp_path / "zizmor.yml")}
    result = audit(workflow, env=env)
    assert result.returncode == 1
    assert result.reported == [f"{workflow}:5: docker-unpinned", f"{workflow}:7: action-tag"]


def fake_zizmor(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, body: str) -> ModuleType:
    """The script, loaded in this process, finding ``body`` (a shell script) as its zizmor."""
    (tmp_path / "bin").mkdir()
    if body:
        program = write(tmp_path / "bin" / "zizmor", f"#!/bin/sh\n{body}\n")
        program.chmod(0o755)
    module = load_script()
    monkeypatch.setattr(module.sysconfig, "get_path", lambda _name: str(tmp_path / "bin"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    return module


VERSION_OK = 'if [ "$1" = --version ]; then echo "zizmor 1.32.0"; exit 0; fi'


@pytest.mark.parametrize(("body", "message"), [
    ("", "zizmor not found"),
    ('echo "zizmor 1.31.0"', "needs zizmor 1.32.0"),
    (f"{VERSION_OK}\necho 'not json'", "zizmor printed no report"),
    (f"{VERSION_OK}\nexec sleep 30", "timed out"),
], ids=["missing", "other-version", "no-json", "timeout"])
def test_an_unusable_zizmor_is_an_error_never_a_pass(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        body: str, message: str) -> None:
    module = fake_zizmor(monkeypatch, tmp_path, body)
    monkeypatch.setattr(module, "ZIZMOR_TIMEOUT", 1)
    assert module.main([str(GOOD)]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "OK" not in captured.out, captured


def test_a_file_zizmor_refuses_is_a_finding(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    module = fake_zizmor(monkeypatch, tmp_path, f"{VERSION_OK}\nexit 1")
    assert module.main([str(GOOD)]) == 1
    assert capsys.readouterr().out == (
        f"{GOOD}:1: zizmor-load-failure: zizmor cannot load this file (no reason given), so none "
        "of its actions or images was audited; make it a valid workflow, or name the composite "
        "action action.yml\n")


# ---------------------------------------------------------------- usage errors


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    result = audit(tmp_path / "absent.yml")
    assert result.returncode == 2
    assert "no such file" in result.stderr and result.stdout == ""


def test_directory_without_workflows_is_a_usage_error(tmp_path: Path) -> None:
    result = audit(tmp_path)
    assert result.returncode == 2
    assert "no *.yml" in result.stderr


def test_unreadable_encoding_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yml"
    path.write_bytes(b"name: caf\xe9\non: push\n")
    result = audit(path)
    assert result.returncode == 2
    assert "not UTF-8" in result.stderr


def test_unknown_option_and_bad_root_are_usage_errors(tmp_path: Path) -> None:
    assert audit("--no-such-option").returncode == 2
    assert audit(GOOD, "--root", tmp_path / "absent").returncode == 2


def test_invalid_yaml_is_a_usage_error_naming_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "broken.yml", "on: push\njobs:\n  build: [unclosed\n")
    result = audit(path)
    assert result.returncode == 2
    assert f"{path}:" in result.stderr and "not valid YAML" in result.stderr


def test_the_script_parses_yaml_with_a_yaml_library() -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    assert "import yaml" in text and "compose_all" in text
    assert "class Parser" not in text and "KEY_LINE" not in text
