"""Tests of the stand-in toolchain itself (tests/standin/README.md), with real bubblewrap.

These drive `tests/standin/toolchain/bin/lake comparator` directly, not through the harness.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess  # noqa: TID251
import sys
import time
from pathlib import Path

import pytest

TOOLCHAIN = Path(__file__).resolve().parents[1] / "standin" / "toolchain"
LAKE = TOOLCHAIN / "bin" / "lake"
NANODA = TOOLCHAIN / "bin" / "nanoda_bin"
BWRAP = Path("/usr/bin/bwrap")
SYS_PATH = "/usr/bin:/bin"
STD_AXIOMS = ["propext", "Quot.sound", "Classical.choice"]
NANODA_BOTH = (
    "error: cannot use `enable_nanoda` and `external_kernels` at the same time; "
    "register nanoda in the list instead"
)

pytestmark = pytest.mark.sandbox


def _require_bwrap() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the stand-in toolchain models Lake on Linux only")
    if not BWRAP.is_file():
        msg = f"{BWRAP} is missing: the stand-in toolchain tests need real bubblewrap"
        if os.environ.get("CI"):
            pytest.fail(msg + " (CI is set, so this is an error; run scripts/install_bwrap.sh)")
        pytest.skip(msg + " (SKIPPED: install bubblewrap to run them)")


@pytest.fixture(autouse=True)
def _need_bwrap() -> None:
    _require_bwrap()


CHALLENGE = """\
import ChallengeDeps
import Mathlib.Tactic

/-- the theorem hole -/
theorem add_zero' (n : Nat) : n + 0 = n := by
  sorry

noncomputable def double : Nat → Nat := sorry
"""

CHALLENGE_DEPS = """\
def Deps.twice (n : Nat) : Nat := 2 * n
"""

SOLUTION = """\
import Submission

theorem add_zero' (n : Nat) : n + 0 = n := by exact Submission.add_zero' n

@[reducible] noncomputable def double : Nat → Nat := Submission.double
"""

SUBMISSION = """\
import Submission.Helpers

namespace Submission

theorem add_zero'  (n : Nat) :
    n + 0 = n := by
  simp [helper]

def double : Nat → Nat := fun n => n + n

end Submission
"""

HELPERS = """\
namespace Submission
theorem helper : True := trivial
end Submission
"""

ACCEPT_LINES = [
    "Resolving dependencies",
    "Building Challenge",
    "Exporting #[add_zero', double] from Challenge",
    "Building Solution",
    "Exporting #[add_zero', double] from Solution",
    "Running nanoda kernel on solution",
    "nanoda kernel accepts the solution",
    "Running Lean default kernel on solution",
    "Lean default kernel accepts the solution",
    "Your solution is okay!",
]


class Project:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / "proj"
        self.tmpdir = root / "tmp"
        self.home = root / "home"
        for d in (self.dir, self.tmpdir, self.home):
            d.mkdir()
        self.config: dict = {
            "challenge_module": "Challenge",
            "solution_module": "Solution",
            "theorem_names": ["add_zero'"],
            "definition_names": ["double"],
            "permitted_axioms": list(STD_AXIOMS),
            "enable_nanoda": False,
            "external_kernels": {"nanoda": [str(NANODA)]},
        }
        self.write("Challenge.lean", CHALLENGE)
        self.write("ChallengeDeps.lean", CHALLENGE_DEPS)
        self.write("Solution.lean", SOLUTION)
        self.write("Submission.lean", SUBMISSION)
        self.write("Submission/Helpers.lean", HELPERS)
        self.write("lake-manifest.json", '{"version": "1.1.0", "packages": []}\n')

    def write(self, rel: str, text: str) -> Path:
        p = self.dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        return p

    def run(
        self,
        *args: str,
        config: dict | str | None = None,
        path: str = SYS_PATH,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        if not args:
            cfg = self.config if config is None else config
            text = cfg if isinstance(cfg, str) else json.dumps(cfg)
            self.write("config.json", text)
            args = ("--config", "config.json")
        full_env = {"PATH": path, "HOME": str(self.home), "TMPDIR": str(self.tmpdir)}
        full_env.update(env or {})
        return subprocess.run(
            [str(LAKE), "comparator", *args],
            cwd=self.dir,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def traces(self) -> list[dict]:
        path = self.dir / ".lake" / "standin-trace.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def phase_lines(out: str) -> list[str]:
    """Stdout without the resolve step's `git --version` line."""
    return [line for line in out.splitlines() if not line.startswith("git version")]


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error: ")]


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


# ---------------------------------------------------------------------------------------------
# acceptance and the trace


@pytest.fixture(scope="module")
def accepted(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Project, subprocess.CompletedProcess[str]]:
    """One accepted run, shared by the tests that only read it."""
    _require_bwrap()
    project = Project(tmp_path_factory.mktemp("accepted"))
    return project, project.run()


def test_accept(accepted: tuple[Project, subprocess.CompletedProcess[str]]) -> None:
    project, r = accepted
    assert r.returncode == 0, r.stderr
    assert phase_lines(r.stdout) == ACCEPT_LINES
    assert error_lines(r.stderr) == []
    assert list(project.tmpdir.iterdir()) == []  # temporary directory removed
    built = project.dir / ".lake" / "build" / "lib" / "lean"
    assert {p.relative_to(built).as_posix() for p in built.rglob("*.olean")} == {
        "Challenge.olean",
        "ChallengeDeps.olean",
        "Solution.olean",
        "Submission.olean",
        "Submission/Helpers.olean",
    }


def test_trace_records_the_run(accepted: tuple[Project, subprocess.CompletedProcess[str]]) -> None:
    project, r = accepted
    assert r.returncode == 0, r.stderr
    (t,) = project.traces()
    proj = str(project.dir)
    assert t["argv"] == [str(LAKE), "comparator", "--config", "config.json"]
    assert t["cwd"] == proj
    assert t["env"] == {"PATH": SYS_PATH, "HOME": str(project.home), "TMPDIR": str(project.tmpdir)}
    assert t["config_path"] == "config.json"
    assert t["config_text"] == (project.dir / "config.json").read_text()
    assert t["resolved"] == {
        "env": "/usr/bin/env",
        "git": "/usr/bin/git",
        "sandbox": str(BWRAP),
        "kernels": {"nanoda": [str(NANODA)]},
    }
    assert t["exit_code"] == 0
    inv = t["sandbox_invocations"]
    assert len(inv) == 7  # resolve, 2 builds, 2 exports, 2 kernels
    sysroot = str(TOOLCHAIN)
    lake_dir = proj + "/.lake"
    head = [
        "--ro-bind",
        "/",
        "/",
        "--tmpfs",
        "/home",
        "--tmpfs",
        "/root",
        "--tmpfs",
        "/run/user",
        "--tmpfs",
        "/tmp",
        "--dir",
        "/tmp/home",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--clearenv",
    ]
    tail = ["--setenv", "HOME", "/tmp/home", "--unshare-all", "--die-with-parent", "--new-session"]
    path_env = ["--setenv", "PATH", SYS_PATH]
    panic = ["--setenv", "LEAN_ABORT_ON_PANIC", "1"]
    masks = ["--tmpfs", "/run", "--tmpfs", "/var"]
    prefix = ["/usr/bin/env", "-i", str(BWRAP)]
    lean_path = f"{proj}/.lake/build/lib/lean:{sysroot}/lib/lean"
    assert inv[0] == [
        *prefix,
        *head,
        "--ro-bind",
        proj,
        proj,
        "--ro-bind",
        sysroot,
        sysroot,
        "--bind",
        lake_dir,
        lake_dir,
        *path_env,
        *panic,
        *tail,
        "--share-net",
        "--chdir",
        proj,
        "--",
        f"{sysroot}/bin/lake",
        "env",
        "/usr/bin/git",
        "--version",
    ]
    for i, module in ((1, "Challenge"), (3, "Solution")):
        assert inv[i] == [
            *prefix,
            *head,
            *masks,
            "--ro-bind",
            proj,
            proj,
            "--ro-bind",
            sysroot,
            sysroot,
            "--bind",
            lake_dir,
            lake_dir,
            *path_env,
            *panic,
            *tail,
            "--chdir",
            proj,
            "--",
            f"{sysroot}/bin/lake",
            "build",
            module,
        ]
        assert inv[i + 1] == [
            *prefix,
            *head,
            *masks,
            "--ro-bind",
            proj,
            proj,
            "--ro-bind",
            sysroot,
            sysroot,
            *path_env,
            "--setenv",
            "LEAN_PATH",
            lean_path,
            *panic,
            *tail,
            "--chdir",
            proj,
            "--",
            f"{sysroot}/bin/leanexport",
            module,
            "--",
            "add_zero'",
            "double",
        ]
    nanoda, checker = inv[5], inv[6]
    cfg_file = nanoda[-1]
    export = checker[-1]
    assert Path(cfg_file).parent == Path(export).parent
    assert Path(export).parent.parent == project.tmpdir
    assert nanoda == [
        *prefix,
        *head,
        *masks,
        "--ro-bind",
        cfg_file,
        cfg_file,
        "--ro-bind",
        export,
        export,
        "--ro-bind",
        str(NANODA),
        str(NANODA),
        "--ro-bind",
        sysroot,
        sysroot,
        *panic,
        *tail,
        "--chdir",
        "/tmp",
        "--",
        str(NANODA),
        cfg_file,
    ]
    leanchecker = f"{sysroot}/bin/leanchecker"
    assert checker == [
        *prefix,
        *head,
        *masks,
        "--ro-bind",
        export,
        export,
        "--ro-bind",
        leanchecker,
        leanchecker,
        "--ro-bind",
        sysroot,
        sysroot,
        *panic,
        *tail,
        "--chdir",
        "/tmp",
        "--",
        leanchecker,
        "--silent",
        "--from-export",
        export,
    ]


def test_trace_on_early_exit(project: Project) -> None:
    (project.dir / "lake-manifest.json").unlink()
    r = project.run(env={"SECRET_TOKEN": "s3cr3t"})
    assert r.returncode == 2
    (t,) = project.traces()
    assert t["exit_code"] == 2
    assert t["env"]["SECRET_TOKEN"] == "s3cr3t"
    assert t["sandbox_invocations"] == []
    assert t["resolved"]["sandbox"] is None
    assert t["resolved"]["kernels"] == {"nanoda": [str(NANODA)]}


def test_config_flag_forms_and_default(project: Project) -> None:
    project.write("other.json", json.dumps(project.config))
    project.write("comparator.json", json.dumps(project.config))
    for args in (("--config=other.json",), ()):
        r = subprocess.run(
            [str(LAKE), "comparator", *args],
            cwd=project.dir,
            env={"PATH": SYS_PATH, "TMPDIR": str(project.tmpdir)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert r.returncode == 0, r.stderr
        assert phase_lines(r.stdout)[-1] == "Your solution is okay!"
    assert [t["config_path"] for t in project.traces()] == ["other.json", "comparator.json"]


# ---------------------------------------------------------------------------------------------
# exit 2: could not start


def _cfg(**changes: object) -> dict:
    """A minimal valid configuration with keys changed (`...` removes a key)."""
    cfg: dict = {
        "challenge_module": "Challenge",
        "solution_module": "Solution",
        "theorem_names": ["add_zero'"],
        "permitted_axioms": STD_AXIOMS,
        "external_kernels": {"nanoda": [str(NANODA)]},
    }
    for k, v in changes.items():
        if v is ...:
            cfg.pop(k)
        else:
            cfg[k] = v
    return cfg


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{", "error: malformed configuration in 'config.json': "),
        ("[1]", "error: malformed configuration in 'config.json': "),
        ('{"x": NaN}', "error: malformed configuration in 'config.json': "),
        (_cfg(theorem_names=...), "error: malformed configuration in 'config.json': "),
        (_cfg(permitted_axioms=...), "error: malformed configuration in 'config.json': "),
        (_cfg(challenge_module=3), "error: malformed configuration in 'config.json': "),
        (_cfg(theorem_names="add_zero'"), "error: malformed configuration in 'config.json': "),
        (_cfg(enable_nanoda="yes"), "error: malformed configuration in 'config.json': "),
        (
            _cfg(external_kernels={"k": "/bin/true"}),
            "error: malformed configuration in 'config.json': ",
        ),
        (
            _cfg(theorem_names=[], definition_names=[]),
            "error: nothing to check: the configuration names no theorems or definitions",
        ),
        (_cfg(enable_nanoda=True), NANODA_BOTH),
        (
            _cfg(external_kernels={"nanoda": [str(NANODA)], "extra": []}),
            "error: `extra` has an empty command",
        ),
        (
            _cfg(external_kernels={"nanoda": ["/nonexistent/nanoda_bin"]}),
            "error: `nanoda` kernel `/nonexistent/nanoda_bin` was not found",
        ),
        (
            _cfg(external_kernels={"nanoda": ["nanoda_bin"]}),
            "error: `nanoda` kernel `nanoda_bin` was not found",
        ),
        (
            _cfg(external_kernels=..., enable_nanoda=True),
            "error: `nanoda` kernel `nanoda_bin` was not found",
        ),
    ],
)
def test_configuration_errors(project: Project, config: dict | str, message: str) -> None:
    r = project.run(config=config)
    assert r.returncode == 2
    assert r.stdout == ""
    assert error_lines(r.stderr)[0].startswith(message), r.stderr
    if not message.endswith(": "):
        assert error_lines(r.stderr) == [message]
    assert project.traces()[0]["sandbox_invocations"] == []


def test_unknown_keys_ignored_and_null_optionals(project: Project) -> None:
    cfg = dict(project.config, surprise={"a": 1}, definition_names=None)
    cfg["theorem_names"] = ["add_zero'"]
    r = project.run(config=cfg)
    assert r.returncode == 0, r.stderr
    assert "Exporting #[add_zero'] from Solution" in r.stdout


def test_unreadable_configuration(project: Project) -> None:
    r = project.run("--config", "missing.json")
    assert r.returncode == 2
    assert error_lines(r.stderr)[0].startswith("error: could not read the configuration: ")
    project.write("config.json", "{}")
    r = project.run("--config", "config.json", "--bogus")
    assert r.returncode == 2


def test_enable_nanoda_resolves_on_path(project: Project) -> None:
    cfg = _cfg(external_kernels=..., enable_nanoda=True, definition_names=["double"])
    r = project.run(config=cfg, path=f"{TOOLCHAIN}/bin:{SYS_PATH}")
    assert r.returncode == 0, r.stderr
    assert project.traces()[0]["resolved"]["kernels"] == {"nanoda": [str(NANODA)]}
    assert "nanoda kernel accepts the solution" in r.stdout


def test_missing_manifest(project: Project) -> None:
    (project.dir / "lake-manifest.json").unlink()
    r = project.run()
    assert r.returncode == 2
    message = (
        f"error: '{project.dir}' has no `lake-manifest.json`, and `lake comparator` resolves"
        " dependencies inside a sandbox that cannot write to the project directory."
        " Run `lake build` there first."
    )
    assert error_lines(r.stderr) == [message]


def test_missing_from_export_file(project: Project) -> None:
    project.write("config.json", json.dumps(project.config))
    r = project.run("--config", "config.json", "--solution-from-export", "nope.ndjson")
    assert r.returncode == 2
    assert error_lines(r.stderr) == ["error: 'nope.ndjson' does not exist"]


def _tools(tmp: Path, *names: str) -> str:
    """A PATH directory with symbolic links to the named system tools."""
    d = tmp / "tools"
    d.mkdir(exist_ok=True)
    for name in names:
        (d / name).symlink_to(f"/usr/bin/{name}")
    return str(d)


@pytest.mark.parametrize(
    ("missing", "present"), [("env", ("git", "bwrap")), ("git", ("env", "bwrap"))]
)
def test_missing_env_or_git(project: Project, missing: str, present: tuple[str, ...]) -> None:
    r = project.run(path=_tools(project.root, *present))
    assert r.returncode == 2
    (line,) = error_lines(r.stderr)
    assert f"`{missing}`" in line
    assert r.stdout == ""


def test_missing_sandbox(project: Project) -> None:
    r = project.run(path=_tools(project.root, "env", "git"))
    assert r.returncode == 2
    (line,) = error_lines(r.stderr)
    assert "`bwrap`" in line
    assert "COMPARATOR_BWRAP" in line
    assert "There is no unsandboxed mode" in line
    for value in ("/nonexistent/bwrap", "no-such-bwrap"):
        r = project.run(env={"COMPARATOR_BWRAP": value})
        assert r.returncode == 2
        (line,) = error_lines(r.stderr)
        assert f"`{value}`" in line
        assert "There is no unsandboxed mode" in line


def test_lookup_skips_non_executables(project: Project) -> None:
    planted = project.root / "planted"
    planted.mkdir()
    (planted / "git").write_text("#!/bin/sh\nexit 1\n")  # not executable: skipped
    (planted / "bwrap").mkdir()  # not a regular file: skipped
    r = project.run(path=f"{planted}:{SYS_PATH}")
    assert r.returncode == 0, r.stderr
    resolved = project.traces()[0]["resolved"]
    assert resolved["git"] == "/usr/bin/git"
    assert resolved["sandbox"] == str(BWRAP)


# ---------------------------------------------------------------------------------------------
# rejections (exit 1)


@pytest.mark.parametrize(
    ("submission", "message"),
    [
        (
            SUBMISSION.replace("n + 0 = n := by", "0 + n = n := by"),
            "Challenge and solution theorem statement do not match: 'add_zero''",
        ),
        (
            SUBMISSION.replace("theorem add_zero'", "def add_zero'"),
            "Challenge and solution constant kind don't match: 'add_zero''",
        ),
        (
            SUBMISSION.replace("theorem add_zero'", "theorem other"),
            "Const not found in solution: 'add_zero''",
        ),
        (
            SUBMISSION.replace("def double : Nat → Nat", "def double : Nat → Int"),
            "Const does not match between challenge and target 'double'",
        ),
        (
            SUBMISSION.replace("theorem add_zero'", "axiom add_zero'"),
            "Challenge and solution constant kind don't match: 'add_zero''",
        ),
        (SUBMISSION.replace("simp [helper]", "sorry"), "Illegal axiom detected: 'sorryAx'"),
        (SUBMISSION.replace("simp [helper]", "admit"), "Illegal axiom detected: 'sorryAx'"),
        (
            SUBMISSION.replace("fun n => n + n", "by native_decide"),
            "Illegal axiom detected: 'Lean.ofReduceBool'",
        ),
        (
            SUBMISSION.replace("simp [helper]", "exact cheat n").replace(
                "namespace Submission\n",
                "namespace Submission\naxiom cheat (n : Nat) : n + 0 = n\n",
            ),
            "Illegal axiom detected: 'Submission.cheat'",
        ),
    ],
    ids=[
        "statement",
        "kind",
        "missing",
        "definition",
        "axiom-kind",
        "sorry",
        "admit",
        "native_decide",
        "declared-axiom",
    ],
)
def test_rejections(project: Project, submission: str, message: str) -> None:
    project.write("Submission.lean", submission)
    r = project.run()
    assert r.returncode == 1
    assert error_lines(r.stderr) == [f"error: {message}"]
    assert phase_lines(r.stdout) == ACCEPT_LINES[:5]  # compared, no kernel ran


def test_used_sorry_in_helper_file_is_illegal(project: Project) -> None:
    project.write("Submission/Helpers.lean", HELPERS.replace("trivial", "sorry"))
    r = project.run()
    assert r.returncode == 1
    assert error_lines(r.stderr) == ["error: Illegal axiom detected: 'sorryAx'"]


def test_unused_sorry_comments_and_permitted_axioms_are_fine(project: Project) -> None:
    project.write(
        "Submission.lean",
        SUBMISSION.replace(
            "end Submission",
            "theorem unused : False := sorry\n-- a comment: sorry\n/- sorry -/\n"
            "axiom myAx : True\ntheorem uses : True := myAx\n\nend Submission",
        ).replace("simp [helper]", "simp [helper, uses] -- not sorry"),
    )
    project.config["permitted_axioms"] = [*STD_AXIOMS, "Submission.myAx"]
    r = project.run()
    assert r.returncode == 0, r.stderr
    project.config["permitted_axioms"] = STD_AXIOMS
    r = project.run()
    assert error_lines(r.stderr) == ["error: Illegal axiom detected: 'Submission.myAx'"]


# An axiom is used whatever the syntax that reaches it: the reference's axiom check walks the
# constant graph (issue 31 item 5). Each form is `(text before the theorem, its proof)`; the
# axiom `Submission.cheat : False` is declared first.
AXIOM_FORMS = {
    "dot": ("", "exact cheat.elim"),
    "paren-dot": ("", "exact (cheat).elim"),
    "explicit": ("", "exact (@cheat).elim"),
    "id": ("", "exact (id cheat).elim"),
    "absurd": ("", "exact absurd cheat id"),
    "full-name-dot": ("", "exact Submission.cheat.elim"),
    "via-abbrev": ("abbrev viaAbbrev : False := cheat\n", "exact viaAbbrev.elim"),
    "via-theorem": ("theorem viaThm : False := id cheat\n", "exact False.elim viaThm"),
    "local-notation": ('local notation "CHEAT" => cheat\n', "exact CHEAT.elim"),
    "symbol-notation": ('local notation "\u203c" => cheat\n', "exact (\u203c).elim"),
    "notation-of-notation": ('local notation "CH1" => cheat\nlocal notation "CH2" => CH1\n',
                             "exact CH2.elim"),
    "macro": ('local macro "by_cheat" : term => `(cheat.elim)\n', "exact by_cheat"),
    "plain": ("", "exact False.elim cheat"),
}


def _with_cheat(before: str, proof: str) -> str:
    return SUBMISSION.replace("simp [helper]", proof).replace(
        "namespace Submission\n", "namespace Submission\naxiom cheat : False\n" + before)


@pytest.mark.parametrize("form", sorted(AXIOM_FORMS))
def test_an_axiom_is_illegal_whatever_form_reaches_it(project: Project, form: str) -> None:
    project.write("Submission.lean", _with_cheat(*AXIOM_FORMS[form]))
    r = project.run()
    assert r.returncode == 1, (form, r.stdout, r.stderr)
    assert error_lines(r.stderr) == ["error: Illegal axiom detected: 'Submission.cheat'"]


def test_an_exported_notation_of_a_helper_reaches_its_axiom(project: Project) -> None:
    project.write("Submission/Helpers.lean", HELPERS.replace(
        "end Submission", 'axiom helperCheat : False\nnotation "HCHEAT" => helperCheat\n'
                          "end Submission"))
    project.write("Submission.lean", SUBMISSION.replace("simp [helper]", "exact HCHEAT.elim"))
    r = project.run()
    assert error_lines(r.stderr) == ["error: Illegal axiom detected: 'Submission.helperCheat'"]


# What real Lean accepts stays accepted: an axiom merely declared, a constant whose name
# starts with the axiom's (name resolution takes the longest name that exists), a notation
# never used, and a permitted axiom reached through a notation.
AXIOM_FREE = {
    "declared-only": ("", "simp [helper]"),
    "longer-name": ("theorem cheat.harmless : True := trivial\n",
                    "simp [helper, cheat.harmless]"),
    "unused-notation": ('local notation "CHEAT" => cheat\n', "simp [helper]"),
}


@pytest.mark.parametrize("form", sorted(AXIOM_FREE))
def test_what_reaches_no_axiom_stays_accepted(project: Project, form: str) -> None:
    project.write("Submission.lean", _with_cheat(*AXIOM_FREE[form]))
    r = project.run()
    assert r.returncode == 0, (form, r.stderr)
    project.config["permitted_axioms"] = [*STD_AXIOMS, "Submission.cheat"]
    project.write("Submission.lean", _with_cheat('local notation "CHEAT" => cheat\n',
                                                 "exact CHEAT.elim"))
    assert project.run().returncode == 0


def test_const_not_found_in_challenge(project: Project) -> None:
    project.write("Challenge.lean", CHALLENGE.replace("theorem add_zero'", "theorem renamed"))
    r = project.run()
    assert r.returncode == 1
    assert error_lines(r.stderr) == ["error: Const not found in challenge: 'add_zero''"]


def test_build_error_after_io(project: Project) -> None:
    project.write(
        "Submission.lean",
        SUBMISSION
        + (
            "-- standin-io: echo 'Your solution is okay!'\n"
            "-- standin-io: echo 'nanoda kernel accepts the solution' >&2\n"
            "-- standin: build-error\n"
        ),
    )
    r = project.run()
    assert r.returncode == 1
    assert phase_lines(r.stdout) == [*ACCEPT_LINES[:4], "Your solution is okay!"]
    assert "nanoda kernel accepts the solution" in r.stderr
    assert error_lines(r.stderr)[-1] == "error: Child exited with 1"


def test_build_failures(project: Project) -> None:
    project.write("ChallengeDeps.lean", CHALLENGE_DEPS + "-- standin: build-error\n")
    r = project.run()
    assert r.returncode == 1
    assert phase_lines(r.stdout) == ACCEPT_LINES[:2]
    assert error_lines(r.stderr)[-1] == "error: Child exited with 1"
    project.write("ChallengeDeps.lean", CHALLENGE_DEPS)
    project.write("Submission.lean", "import Submission.Missing\n" + SUBMISSION)
    r = project.run()
    assert r.returncode == 1
    assert "unknown module 'Submission.Missing'" in r.stderr
    assert error_lines(r.stderr)[-1] == "error: Child exited with 1"
    # a submitted declaration may not take the name of the Solution's target
    project.write(
        "Submission.lean", SUBMISSION + "theorem add_zero' (n : Nat) : n + 0 = n := rfl\n"
    )
    r = project.run()
    assert r.returncode == 1
    assert "'add_zero'' has already been declared" in r.stderr
    assert error_lines(r.stderr)[-1] == "error: Child exited with 1"


# ---------------------------------------------------------------------------------------------
# kernels


def test_kernel_order_and_all_kernels_run(project: Project) -> None:
    project.config["external_kernels"] = {
        "zeta": ["/bin/true"],
        "nanoda": [str(NANODA)],
        "alpha": ["/bin/false"],
    }
    project.write("Submission.lean", SUBMISSION + "-- standin: kernel-reject Lean default\n")
    r = project.run()
    assert r.returncode == 1
    assert phase_lines(r.stdout)[5:] == [
        "Running alpha kernel on solution",
        "alpha kernel rejected the solution",
        "Running nanoda kernel on solution",
        "nanoda kernel accepts the solution",
        "Running zeta kernel on solution",
        "zeta kernel accepts the solution",
        "Running Lean default kernel on solution",
        "Lean default kernel rejected the solution",
    ]
    assert error_lines(r.stderr) == ["error: alpha exited with 1"]


def test_kernel_reject_nanoda(project: Project) -> None:
    project.write("Submission.lean", SUBMISSION + "  -- standin: kernel-reject nanoda\n")
    r = project.run()
    assert r.returncode == 1
    assert phase_lines(r.stdout)[5:] == [
        "Running nanoda kernel on solution",
        "nanoda kernel rejected the solution",
        "Running Lean default kernel on solution",
        "Lean default kernel accepts the solution",
    ]
    assert error_lines(r.stderr) == ["error: nanoda exited with 1"]


PARANOID = ("Lean paranoid", "lean4lean", "nanoda", "con-leche", "con-ron", "Lean default")


def _kernel_lines(stdout: str) -> list[str]:
    lines = phase_lines(stdout)
    return lines[lines.index("Running Lean paranoid kernel on solution"):]


def test_paranoid_runs_every_bundled_checker_in_order(project: Project) -> None:
    project.write("config.json", json.dumps(project.config))
    r = project.run("--config", "config.json", "--paranoid")
    assert r.returncode == 0, r.stderr
    assert _kernel_lines(r.stdout) == [
        line for k in PARANOID
        for line in (f"Running {k} kernel on solution", f"{k} kernel accepts the solution")
    ] + ["Your solution is okay!"]
    (t,) = project.traces()
    bin_dir = str(TOOLCHAIN / "bin")
    # the configured nanoda runs once, as configured; the others are the bundled programs
    assert t["resolved"]["kernels"] == {
        "nanoda": [str(NANODA)],
        "Lean paranoid": [f"{bin_dir}/leanchecker-paranoid", "--silent", "--from-export"],
        "lean4lean": [f"{bin_dir}/lean4lean"],
        "con-leche": [f"{bin_dir}/con-leche"],
        "con-ron": [f"{bin_dir}/con-ron"],
    }
    kernels = [inv[inv.index("--") + 1:] for inv in t["sandbox_invocations"][5:]]
    assert [k[0] for k in kernels] == [
        f"{bin_dir}/leanchecker-paranoid", f"{bin_dir}/lean4lean", str(NANODA),
        f"{bin_dir}/con-leche", f"{bin_dir}/con-ron", f"{bin_dir}/leanchecker"]
    assert kernels[0][1:3] == ["--silent", "--from-export"]
    assert kernels[2][1].endswith("-config.json")  # nanoda still gets its config file
    assert all(k[-1].endswith("solution.ndjson") for i, k in enumerate(kernels) if i != 2)


def test_paranoid_external_kernels_follow_the_bundled_ones(project: Project) -> None:
    project.config["external_kernels"] = {"nanoda": [str(NANODA)], "alpha": ["/bin/true"]}
    project.write("config.json", json.dumps(project.config))
    r = project.run("--config", "config.json", "--paranoid")
    assert r.returncode == 0, r.stderr
    running = [ln.removeprefix("Running ").removesuffix(" kernel on solution")
               for ln in phase_lines(r.stdout) if ln.startswith("Running ")]
    assert running == [*PARANOID[:5], "alpha", "Lean default"]


@pytest.mark.parametrize("checker", PARANOID)
def test_each_paranoid_checker_rejects_on_its_directive(project: Project, checker: str) -> None:
    project.write("Submission.lean", SUBMISSION + f"-- standin: kernel-reject {checker}\n")
    project.write("config.json", json.dumps(project.config))
    r = project.run("--config", "config.json", "--paranoid")
    assert r.returncode == 1
    lines = _kernel_lines(r.stdout)
    for k in PARANOID:  # every checker still runs; only the named one rejects
        verb = "rejected" if k == checker else "accepts"
        assert f"{k} kernel {verb} the solution" in lines
    assert error_lines(r.stderr) == [f"error: {checker} exited with 1"]
    # without --paranoid only nanoda and Lean default run: a paranoid-only directive is unseen
    plain = project.run()
    assert plain.returncode == (1 if checker in ("nanoda", "Lean default") else 0), plain.stderr


def test_paranoid_missing_bundled_checker_is_exit_2(project: Project) -> None:
    tc = project.root / "tc"
    shutil.copytree(TOOLCHAIN, tc, symlinks=True)
    (tc / "bin" / "con-ron").unlink()
    project.write("config.json", json.dumps(project.config))
    r = subprocess.run([str(tc / "bin" / "lake"), "comparator", "--config", "config.json",
                        "--paranoid"], cwd=project.dir, capture_output=True, text=True,
                       env={"PATH": SYS_PATH, "HOME": str(project.home),
                            "TMPDIR": str(project.tmpdir)}, timeout=60, check=False)
    assert r.returncode == 2
    assert error_lines(r.stderr) == [
        f"error: `con-ron` kernel `{os.path.realpath(tc)}/bin/con-ron` was not found"]


def test_kernel_handoff(project: Project) -> None:
    show = (
        '#!/bin/sh\nprintf "BEGIN %s %s\\n" "$(basename "$0")" "$1" >&2\n'
        'cat "$1" >&2\nprintf "\\nEND\\n" >&2\n'
    )
    mynoda = executable(project.root / "k" / "mynoda", show)
    other = executable(project.root / "k" / "other", show)
    project.config["external_kernels"] = {"mynoda": [str(mynoda)], "other": [str(other)]}
    r = project.run()
    assert r.returncode == 0, r.stderr
    got: dict[str, tuple[str, str]] = {}
    for block in r.stderr.split("BEGIN ")[1:]:
        head, _, rest = block.partition("\n")
        name, arg = head.split(" ", 1)
        got[name] = (arg, rest[: rest.rindex("\nEND")])
    cfg_path, cfg_text = got["mynoda"]
    export_path, export_text = got["other"]
    assert Path(cfg_path).parent.parent == project.tmpdir
    assert Path(cfg_path).parent == Path(export_path).parent
    header = json.loads(export_text.splitlines()[0])
    assert header["module"] == "Solution"
    assert header["names"] == ["add_zero'", "double"]
    assert json.loads(cfg_text) == {
        "export_file_path": export_path,
        "nat_extension": True,
        "num_threads": 4,
        "permitted_axioms": STD_AXIOMS,
        "string_extension": True,
        "unpermitted_axiom_hard_error": True,
        "use_stdin": False,
    }
    assert not Path(cfg_path).exists()  # removed at exit


# ---------------------------------------------------------------------------------------------
# the sandbox, seen from a submission


def test_io_runs_inside_the_sandbox(project: Project) -> None:
    marker = project.root / "host-etc-marker"
    io = [
        f"touch {marker} /etc/probe 2>/dev/null && echo rw > .lake/etc || echo ro > .lake/etc",
        "touch Solution.lean 2>/dev/null && echo rw > .lake/proj || echo ro > .lake/proj",
        "ls -A /root | wc -l > .lake/root-count",
        "echo home > $HOME/h && cat $HOME/h > .lake/home",
        "env | sort > .lake/env",
        "pwd > .lake/pwd",
        "echo one >> .lake/order",
    ]
    project.write("Submission.lean", SUBMISSION + "".join(f"-- standin-io: {c}\n" for c in io))
    helpers_io = "-- standin-io: echo helpers >> .lake/order\n"
    project.write("Submission/Helpers.lean", HELPERS + helpers_io)
    project.write("Submission/Unused.lean", "-- standin-io: echo unused >> .lake/order\n")
    r = project.run(env={"SECRET_TOKEN": "s3cr3t"})
    assert r.returncode == 0, r.stderr
    lake = project.dir / ".lake"
    assert (lake / "etc").read_text() == "ro\n"
    assert not Path("/etc/probe").exists()
    assert not marker.exists()
    assert (lake / "proj").read_text() == "ro\n"
    assert os.listdir("/root")  # the host's /root is not empty ...
    assert (lake / "root-count").read_text().strip() == "0"  # ... but masked
    assert (lake / "home").read_text() == "home\n"
    assert not (project.home / "h").exists()
    env = dict(line.split("=", 1) for line in (lake / "env").read_text().splitlines())
    assert env.pop("PWD") == str(project.dir)
    env.pop("SHLVL", None)
    assert env == {"PATH": SYS_PATH, "HOME": "/tmp/home", "LEAN_ABORT_ON_PANIC": "1"}
    assert (lake / "pwd").read_text() == f"{project.dir}\n"
    assert (lake / "order").read_text() == "helpers\nunused\none\n"


def test_planted_git_runs_in_the_sandbox(project: Project) -> None:
    # in the project, which the sandbox shows (a planted git under /tmp would be masked there)
    planted = executable(
        project.dir / "tools" / "git", "#!/bin/sh\necho planted-git > .lake/planted-git\nexit 0\n"
    )
    r = project.run(path=f"{planted.parent}:{SYS_PATH}")
    assert r.returncode == 0, r.stderr
    assert (project.dir / ".lake" / "planted-git").read_text() == "planted-git\n"
    t = project.traces()[0]
    assert t["resolved"]["git"] == str(planted)
    assert t["sandbox_invocations"][0][-2:] == [str(planted), "--version"]
    executable(planted, "#!/bin/sh\nexit 3\n")
    r = project.run(path=f"{planted.parent}:{SYS_PATH}")
    assert r.returncode == 1
    assert error_lines(r.stderr) == ["error: Child exited with 3"]


def test_env_is_looked_up_again_for_every_step(project: Project) -> None:
    """A PATH entry inside the writable `.lake` lets a build plant `env` for later steps:
    the breakage a harness must prevent by filtering PATH."""
    evidence = project.dir / "planted-env-ran"
    plant = (
        "mkdir -p .lake/bin && printf '#!/bin/sh\\necho ran >> %s\\nexec /usr/bin/env \"$@\"\\n'"
        f" {evidence} > .lake/bin/env && chmod +x .lake/bin/env"
    )
    project.write("Submission.lean", SUBMISSION + f"-- standin-io: {plant}\n")
    r = project.run(path=f"{project.dir}/.lake/bin:{SYS_PATH}")
    assert r.returncode == 0, r.stderr
    inv = project.traces()[0]["sandbox_invocations"]
    planted = f"{project.dir}/.lake/bin/env"
    assert [i[0] for i in inv] == ["/usr/bin/env"] * 4 + [planted] * 3
    assert evidence.read_text() == "ran\n" * 3  # ran outside the sandbox


def test_comparator_bwrap_wrapper(project: Project) -> None:
    log = project.root / "wrapper.log"
    wrapper = executable(
        project.root / "w" / "bwrap-wrapper",
        f'#!/bin/sh\necho "$(env | wc -l) $1" >> {log}\nexec {BWRAP} "$@"\n',
    )
    r = project.run(env={"COMPARATOR_BWRAP": str(wrapper)})
    assert r.returncode == 0, r.stderr
    # started 7 times, with an empty environment (sh itself adds PWD at most), Lake's args first
    lines = log.read_text().splitlines()
    assert len(lines) == 7
    assert all(int(n) <= 1 and arg == "--ro-bind" for n, arg in (x.split() for x in lines))
    assert project.traces()[0]["resolved"]["sandbox"] == str(wrapper)
    # without a slash it is looked up on PATH
    r = project.run(env={"COMPARATOR_BWRAP": "bwrap-wrapper"}, path=f"{wrapper.parent}:{SYS_PATH}")
    assert r.returncode == 0, r.stderr
    assert project.traces()[1]["resolved"]["sandbox"] == str(wrapper)


def test_sandbox_setup_failure_is_child_exit(project: Project) -> None:
    failing = executable(
        project.root / "w" / "bwrap",
        "#!/bin/sh\necho 'bwrap: Can'\"'\"'t mount proc on /newroot/proc: Operation not permitted'"
        " >&2\nexit 1\n",
    )
    r = project.run(env={"COMPARATOR_BWRAP": str(failing)})
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        "bwrap: Can't mount proc on /newroot/proc: Operation not permitted",
        "error: Child exited with 1",
    ]
    assert phase_lines(r.stdout) == ["Resolving dependencies"]


def test_inadvisably_no_sandbox(project: Project) -> None:
    project.write("config.json", json.dumps(project.config))
    r = project.run(
        "--config", "config.json", "--inadvisably-no-sandbox", path=_tools(project.root, "git")
    )
    assert r.returncode == 0, r.stderr
    assert "WARNING: Sandbox disabled, this run is not trustworthy." in r.stderr.splitlines()
    t = project.traces()[0]
    assert t["resolved"]["env"] is None
    assert t["resolved"]["sandbox"] is None
    assert t["sandbox_invocations"][0] == [
        f"{TOOLCHAIN}/bin/lake",
        "env",
        t["resolved"]["git"],
        "--version",
    ]


def test_from_export(project: Project) -> None:
    r = project.run()
    assert r.returncode == 0, r.stderr
    lean_path = str(project.dir / ".lake" / "build" / "lib" / "lean")
    exported = subprocess.run(
        [str(TOOLCHAIN / "bin" / "leanexport"), "Solution", "--", "add_zero'", "double"],
        cwd=project.dir,
        env={"LEAN_PATH": lean_path},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    (project.root / "sol.ndjson").write_text(exported)
    project.write("Submission.lean", SUBMISSION.replace("simp [helper]", "sorry"))
    r = project.run(
        "--config", "config.json", "--solution-from-export", str(project.root / "sol.ndjson")
    )
    assert r.returncode == 0, r.stderr
    assert "Building Solution" not in r.stdout


def _argv_holds(token: str) -> bool:
    """Whether a live (non-zombie) process carries ``token`` in its command line."""
    return any(_live_with(entry, token.encode()) for entry in Path("/proc").iterdir()
               if entry.name.isdigit())


def _live_with(entry: Path, token: bytes) -> bool:
    try:
        if token not in (entry / "cmdline").read_bytes():
            return False
        stat = (entry / "stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] != b"Z"


def test_sigterm_ends_the_sandbox(project: Project) -> None:
    evidence = project.dir / ".lake" / "survivor"
    token = f"survivor-{os.getpid()}-{time.monotonic_ns()}"  # in the background shell's argv
    project.write(
        "Submission.lean",
        SUBMISSION
        + (
            f"-- standin-io: (sleep 1; : {token}; echo alive > .lake/survivor) &\n"
            "-- standin-io: echo started; sleep 30\n"
        ),
    )
    project.write("config.json", json.dumps(project.config))
    env = {"PATH": SYS_PATH, "TMPDIR": str(project.tmpdir)}
    proc = subprocess.Popen(
        [str(LAKE), "comparator", "--config", "config.json"],
        cwd=project.dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == "started":
            break
    assert _argv_holds(token)  # the background shell is live (so the wait below is not vacuous)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    proc.stdout.close()
    # an event, not a fixed delay: the background shell ends with the sandbox, or (surviving)
    # by writing the evidence; either way its argv leaves /proc
    deadline = time.monotonic() + 60
    while _argv_holds(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _argv_holds(token)
    assert not evidence.exists()
    assert project.traces()[0]["exit_code"] == 128 + signal.SIGTERM
