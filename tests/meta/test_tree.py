"""The tree is the map (docs/design.md §2): a small public face at the top of the package,
subpackages below it, modules of one concern each."""

from __future__ import annotations

from support import REPO

PACKAGE = REPO / "lean_eval"
MAX_LINES = 350
# Names that could hold anything: a module's name says what it holds.
VAGUE = {"run", "context", "limits", "utils", "helpers", "misc", "common", "util"}


def test_the_top_of_the_package_is_its_public_face() -> None:
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(top) <= 6, top
    assert {"__init__", "__main__", "api", "errors"} <= set(top)
    assert all((sub / "__init__.py").is_file()
               for sub in PACKAGE.iterdir() if sub.is_dir() and sub.name != "__pycache__")


def test_no_module_is_over_the_line_limit() -> None:
    long = {str(p.relative_to(REPO)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_no_module_has_a_name_that_could_hold_anything() -> None:
    assert sorted(str(p.relative_to(REPO)) for p in PACKAGE.rglob("*.py")
                  if p.stem in VAGUE) == []


def test_every_subpackage_says_what_it_holds_and_may_import() -> None:
    quiet = [sub.name for sub in PACKAGE.iterdir()
             if (sub / "__init__.py").is_file()
             and "import" not in (sub / "__init__.py").read_text(encoding="utf-8").lower()]
    assert quiet == []
