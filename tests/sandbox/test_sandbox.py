"""The COMPARATOR_BWRAP wrapper, search-path filtering and Lake's environment."""

from __future__ import annotations

import json
import os
import stat
import subprocess  # noqa: TID251 - the wrapper is a shell script run directly here
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import examples

from lean_eval.records.verdict import Mounts
from lean_eval.sandbox import environment, masks, wrapper

LAKE_ARGS = [
    "--ro-bind", "/", "/", "--tmpfs", "/home", "--tmpfs", "/root", "--tmpfs", "/run/user",
    "--tmpfs", "/tmp", "--dir", "/tmp/home", "--dev", "/dev", "--proc", "/proc", "--clearenv",
    "--tmpfs", "/run", "--tmpfs", "/var",
    "--ro-bind", "/w/p", "/w/p", "--ro-bind", "/tc", "/tc", "--bind", "/w/p/.lake", "/w/p/.lake",
    "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LEAN_ABORT_ON_PANIC", "1",
    "--setenv", "HOME", "/tmp/home", "--unshare-all", "--die-with-parent", "--new-session",
    "--chdir", "/w/p", "--", "/tc/bin/lake", "build", "Solution",
]
MOUNT_END = LAKE_ARGS.index("--setenv")


def wrapper_spec(bwrap: Path, **mounts: tuple[str, ...]) -> wrapper.WrapperSpec:
    """A spec with ``mounts`` as the run's mask set (its fields by name)."""
    return wrapper.WrapperSpec(bwrap=bwrap, mounts=Mounts(**mounts))


@pytest.fixture
def echo_bwrap(tmp_path: Path) -> Path:
    """A stand-in for bwrap that prints the argv it was given, as JSON."""
    fake = tmp_path / "fake-bwrap"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    fake.chmod(0o755)
    return fake


def run_wrapper(tmp_path: Path, spec: wrapper.WrapperSpec,
                args: list[str]) -> subprocess.CompletedProcess[str]:
    script = wrapper.write_wrapper(tmp_path / "wrapper", spec)
    return subprocess.run(["/usr/bin/env", "-i", str(script), *args], capture_output=True,
                          text=True, check=False)


def test_insert_is_exact() -> None:
    spec = wrapper_spec(bwrap=Path("/usr/bin/bwrap"), ro_binds=("/pk",),
                        masks=("/srv/in", "/srv/out"), file_masks=("/srv/a.tar",),
                        reexposed=("/srv/in/bench",))
    assert wrapper.early_insert(spec) == (
        "--ro-bind", "/dev/null", "/srv/a.tar", "--tmpfs", "/srv/in",
        "--ro-bind", "/srv/in/bench", "/srv/in/bench", "--tmpfs", "/srv/out",
    )
    assert wrapper.late_insert(spec) == ("--ro-bind", "/pk", "/pk")
    assert wrapper.NO_NESTED_USERNS == ("--unshare-user", "--disable-userns")
    assert wrapper.NO_CAPABILITIES == ("--cap-drop", "ALL")
    assert wrapper.wrapper_insert(spec) == (*wrapper.early_insert(spec),
                                            *wrapper.late_insert(spec),
                                            "--unshare-user", "--disable-userns",
                                            "--cap-drop", "ALL")


def test_early_insert_orders_parents_first_and_masks_before_reexposure() -> None:
    spec = wrapper_spec(bwrap=Path("/b"), masks=("/srv/x/bench/subs", "/srv/x", "/srv/y"),
                        reexposed=("/srv/x/bench", "/srv/y"))
    assert wrapper.early_insert(spec) == (
        "--tmpfs", "/srv/x", "--ro-bind", "/srv/x/bench", "/srv/x/bench",
        "--tmpfs", "/srv/x/bench/subs", "--tmpfs", "/srv/y", "--ro-bind", "/srv/y", "/srv/y",
    )


def test_wrapper_text_embeds_absolute_bwrap_and_reads_no_environment() -> None:
    text = wrapper.wrapper_text(wrapper_spec(bwrap=Path("/opt/bw/bin/bwrap"),
                                             masks=("/srv/x y",)))
    assert text.startswith("#!/bin/sh\n")
    assert "exec /opt/bw/bin/bwrap \"$@\"" in text
    assert "'/srv/x y'" in text
    assert "$PATH" not in text and "${" not in text


def test_wrapper_puts_masks_after_the_root_bind_and_packages_after_the_last_mount(
        tmp_path: Path, echo_bwrap: Path) -> None:
    spec = wrapper_spec(bwrap=echo_bwrap, ro_binds=("/pk",),
                        masks=("/srv/sub's dir",), file_masks=("/srv/a.tar",),
                        reexposed=("/srv/sub's dir/tc",))
    done = run_wrapper(tmp_path, spec, LAKE_ARGS)
    assert done.returncode == 0, done.stderr
    expected = (LAKE_ARGS[:3] + list(wrapper.early_insert(spec)) + LAKE_ARGS[3:MOUNT_END]
                + list(wrapper.late_insert(spec))
                + ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
                + LAKE_ARGS[MOUNT_END:])
    assert json.loads(done.stdout) == expected


def test_wrapper_finds_the_root_bind_after_non_mount_options(
        tmp_path: Path, echo_bwrap: Path) -> None:
    args = ["--clearenv", "--ro-bind", "/", "/", "--bind", "/w", "/w", "--", "/bin/true"]
    spec = wrapper_spec(bwrap=echo_bwrap, masks=("/m",), ro_binds=("/pk",))
    out = json.loads(run_wrapper(tmp_path, spec, args).stdout)
    assert out == ["--clearenv", "--ro-bind", "/", "/", "--tmpfs", "/m", "--bind", "/w", "/w",
                   "--ro-bind", "/pk", "/pk", "--unshare-user", "--disable-userns",
                   "--cap-drop", "ALL", "--",
                   "/bin/true"]


def test_wrapper_mounts_added_do_not_grow_with_the_batch(outside: Path) -> None:
    """The constant mask set: a run of 10 or of 1,000 inputs under one parent adds the same
    mounts (the parent, the scoring root, --out), never one per input."""
    def count(n: int) -> int:
        base = outside / str(n)
        inputs = [base / "subs" / f"s{i}" for i in range(n)]
        for path in [*inputs, base / "work", base / "out" / "o"]:
            path.mkdir(parents=True)
        out = base / "out" / "o"
        mounts = masks.run_masks(scoring_root=base / "work", out_dir=out, inputs=inputs,
                                  private=masks.default_private_roots(inputs, out), keep=())
        spec = wrapper.WrapperSpec(bwrap=Path("/b"), mounts=mounts)
        return len(wrapper.wrapper_insert(spec))
    # the same masks each time, then NO_NESTED_USERNS and NO_CAPABILITIES
    assert count(10) == count(1000) == 12


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([*LAKE_ARGS[:2], "--args", "3", "--", "/bin/true"], id="unknown-option"),
        pytest.param(["--ro-bind", "/", "/", "/bin/true"], id="no-double-dash"),
        pytest.param([*LAKE_ARGS[:3], "--cap-add", "ALL", "--", "/bin/true"], id="cap-add"),
        pytest.param(["--unshare-all", "--", "/bin/true"], id="no-mounts"),
        pytest.param(["--tmpfs", "/tmp", "--ro-bind", "/", "/", "--", "/bin/true"],
                     id="first-mount-not-root-bind"),
        pytest.param(["--ro-bind", "/usr", "/", "--", "/bin/true"], id="root-bind-of-another-dir"),
        pytest.param(["--bind", "/", "/", "--", "/bin/true"], id="writable-root"),
    ],
)
def test_wrapper_fails_closed(tmp_path: Path, echo_bwrap: Path, args: list[str]) -> None:
    done = run_wrapper(tmp_path, wrapper_spec(bwrap=echo_bwrap, masks=("/m",)), args)
    assert done.returncode == 126
    assert done.stderr.startswith(f"{wrapper.WRAPPER_TAG}: ")
    assert done.stdout == ""


def test_wrapper_refuses_newlines_in_paths() -> None:
    with pytest.raises(ValueError, match="newline"):
        wrapper.wrapper_text(wrapper_spec(bwrap=Path("/b"), masks=("/a\nb",)))


def test_wrapper_refuses_a_lake_without_root_bind_even_with_nothing_to_insert(
        tmp_path: Path, echo_bwrap: Path) -> None:
    done = run_wrapper(tmp_path, wrapper_spec(bwrap=echo_bwrap),
                       ["--bind", "/", "/", "--", "/bin/true"])
    assert done.returncode == 126 and done.stdout == ""


# --- search-path filtering -------------------------------------------------------------------


def _mkbin(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_filter_keeps_trusted_absolute_existing_entries(tmp_path: Path) -> None:
    root = _mkbin(tmp_path / "score")
    assert environment.filter_search_path("/usr/bin:/bin", [root]) == ("/usr/bin", "/bin")


def test_filter_drops_planted_entries_every_way(tmp_path: Path) -> None:
    root = _mkbin(tmp_path / "score")
    planted = _mkbin(root / "ws" / ".lake" / "build" / "bin")
    link = tmp_path / "innocent"
    link.symlink_to(planted)
    via_parent = tmp_path / "parentlink"
    via_parent.symlink_to(root / "ws")
    value = ":".join([str(planted), ".lake/build/bin", "", str(link),
                      str(via_parent / ".lake" / "build" / "bin"), "/nonexistent/bin",
                      "/usr/bin", "/usr/bin"])
    assert environment.filter_search_path(value, [root]) == ("/usr/bin",)


def test_filter_drops_world_writable_directories(tmp_path: Path) -> None:
    open_dir = _mkbin(tmp_path / "open")
    open_dir.chmod(0o777)
    sticky = _mkbin(tmp_path / "sticky")
    sticky.chmod(0o777 | stat.S_ISVTX)
    inside_sticky = _mkbin(sticky / "bin")
    kept = environment.filter_search_path(f"{open_dir}:{inside_sticky}", [])
    assert kept == (str(inside_sticky),)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.sampled_from(["", ".", "rel/bin", "ROOT", "ROOT/a", "LINK", "/usr/bin",
                                 "/bin", "/nope", "ROOT/../ROOT/a"]), max_size=8))
def test_filter_never_keeps_anything_inside_a_writable_root(entries: list[str]) -> None:
    # Not tmp_path (hypothesis reuses one function scope for every example): the session's
    # private temp base, which conftest removes at the end.
    base = Path(os.environ.get("LEAN_EVAL_HYPOTHESIS_DIR") or tempfile.gettempdir()) / "pf"
    root = _mkbin(base / "root")
    _mkbin(root / "a")
    link = base / "link"
    if not link.is_symlink():
        link.symlink_to(root)
    value = ":".join(e.replace("ROOT", str(root)).replace("LINK", str(link)) for e in entries)
    kept = environment.filter_search_path(value, [root])
    for entry in kept:
        assert Path(entry).is_absolute()
        assert not os.path.realpath(entry).startswith(str(root.resolve()))
    assert len(kept) == len(set(kept))


def test_lake_environment_is_the_allowlist_only(tmp_path: Path) -> None:
    caller = {"PATH": "/usr/bin", "HOME": "/h", "LANG": "C.UTF-8", "AWS_SECRET_ACCESS_KEY": "s",
              "LD_PRELOAD": "/evil.so", "GITHUB_TOKEN": "t", "LEAN_PATH": "/x"}
    env = environment.lake_environment(caller, search_path=("/usr/bin", "/bin"), tmpdir=tmp_path,
                                   wrapper=tmp_path / "w")
    assert env == {"PATH": "/usr/bin:/bin", "HOME": "/h", "LANG": "C.UTF-8",
                   "TMPDIR": str(tmp_path), "COMPARATOR_BWRAP": str(tmp_path / "w")}
    assert set(env) <= set(environment.ENV_ALLOWLIST)


# --- the run's constant mask set --------------------------------------------------------------


def _tree(base: Path, *dirs: str) -> None:
    for d in dirs:
        (base / d).mkdir(parents=True, exist_ok=True)


def test_run_masks_hide_scoring_root_out_and_private_roots(outside: Path) -> None:
    _tree(outside, "work", "runs/out", "subs/a", "subs/b", "private", "tc", "bench/.lake/packages")
    (outside / "subs" / "c.tar").write_bytes(b"")
    inputs = [outside / "subs" / "a", outside / "subs" / "b", outside / "subs" / "c.tar"]
    out = outside / "runs" / "out"
    mounts = masks.run_masks(
        scoring_root=outside / "work", out_dir=out, inputs=inputs,
        private=[outside / "private", *masks.default_private_roots(inputs, out)],
        keep=[outside / "tc", outside / "bench" / ".lake" / "packages"])
    assert mounts.masks == tuple(str(outside / d) for d in (
        "private", "runs", "runs/out", "subs", "work"))
    assert mounts.file_masks == ()
    alone = masks.run_masks(scoring_root=outside / "work", out_dir=out, inputs=inputs,
                              private=[], keep=[])
    assert alone.masks == tuple(str(outside / d) for d in ("runs/out", "subs/a", "subs/b", "work"))
    assert alone.file_masks == (str(outside / "subs" / "c.tar"),)
    assert mounts.reexposed == ()


def test_run_masks_bind_back_what_scoring_needs_inside_a_private_root(outside: Path) -> None:
    _tree(outside, "work", "out", "tc/bin", "bench/.lake/packages/p", "sub")
    mounts = masks.run_masks(scoring_root=outside / "work", out_dir=outside / "out",
                              inputs=[outside / "sub"], private=[outside],
                              keep=[outside / "tc", outside / "bench" / ".lake" / "packages"])
    assert str(outside) in mounts.masks
    assert mounts.reexposed == (str(outside / "bench" / ".lake" / "packages"), str(outside / "tc"))
    assert len(mounts.notes) == 2 and all("bound back read-only" in n for n in mounts.notes)


def test_run_masks_never_mask_a_system_directory(outside: Path) -> None:
    mounts = masks.run_masks(scoring_root=outside, out_dir=outside, inputs=[Path("/etc/hostname")],
                              private=[Path("/"), Path("/etc"), Path("/usr")], keep=())
    assert mounts.masks == (str(outside),)
    assert mounts.file_masks == ("/etc/hostname",)
    assert {"/", "/etc", "/usr"}.isdisjoint(mounts.masks)


def test_run_masks_only_existing_directories_outside_lake_masks(outside: Path) -> None:
    mounts = masks.run_masks(scoring_root=outside / "missing", out_dir=Path("/tmp"),
                              inputs=[Path("/home/u/sub")], private=[Path("/root/x")], keep=())
    assert mounts.masks == () and mounts.file_masks == ()
