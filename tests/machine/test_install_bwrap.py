"""scripts/install_bwrap.sh: checksum refusal, argument handling and the AppArmor profile.

No test here touches the network: the tarball is always a local file, and every tool that could
unpack, build or download (tar, xz, meson, ninja, curl, wget) is replaced by a shim that only
records that it ran. The success path needs the real release tarball and meson; it runs only
when BWRAP_TARBALL in the environment names a file with the pinned digest (skipped otherwise).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess  # noqa: TID251 - the installer is a shell script run as a real child process
import tarfile
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "install_bwrap.sh"
TEMPLATE = REPO / "scripts" / "apparmor" / "bwrap-lean-eval"
PINNED = "9760d007363e3abba7c747489910f9f82d9fca53ba3bd3282e396fa3c97a3314"
VERSION = "0.12.0"
USERNS_SYSCTL = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
BASH = shutil.which("bash") or "/bin/bash"
# What the script needs up to and including the checksum; nothing that unpacks or builds.
CHECKSUM_TOOLS = ("bash", "env", "sha256sum", "mktemp", "cp", "rm", "chmod", "realpath",
                  "dirname")
SHIMMED = ("tar", "xz", "meson", "ninja", "curl", "wget", "apparmor_parser", "cc")
# Answers the script's libcap check (`pkg-config --exists libcap`) as a machine that has it.
PKG_CONFIG_SHIM = "#!/bin/sh\nexit 0\n"

SHIM = """#!/bin/sh
printf '%s %s\\n' "$(basename "$0")" "$*" >> "{log}"
exit 1
"""
# Stands in for curl: records the URL and "downloads" the given local file.
CURL_SHIM = """#!/bin/sh
printf 'curl %s\\n' "$*" >> "{log}"
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift 2 ;;
    *) shift ;;
  esac
done
cp "{payload}" "$out"
"""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fake_tarball(path: Path) -> Path:
    """A well-formed bubblewrap-0.12.0.tar.xz lookalike holding a marker file."""
    with tarfile.open(path, "w:xz") as tar:
        for name, data in (("bubblewrap-0.12.0/UNPACKED_MARKER", b"unpacked\n"),
                           ("bubblewrap-0.12.0/meson.build", b"project('bubblewrap')\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert _sha256(path) != PINNED
    return path


class Sandbox:
    """Private TMPDIR, cwd, prefix and a shim directory that logs any forbidden tool."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root / "tmp"
        self.cwd = root / "cwd"
        self.prefix = root / "prefix"
        self.shims = root / "shims"
        self.log = root / "shim.log"
        for d in (self.tmp, self.cwd, self.prefix, self.shims):
            d.mkdir()
        self.tarball = _fake_tarball(root / "bubblewrap-0.12.0.tar.xz")
        for tool in SHIMMED:
            self._shim(tool, SHIM.format(log=self.log))
        self._shim("pkg-config", PKG_CONFIG_SHIM)

    def _shim(self, name: str, text: str) -> None:
        shim = self.shims / name
        shim.write_text(text)
        shim.chmod(0o755)

    def use_curl_shim(self) -> None:
        self._shim("curl", CURL_SHIM.format(log=self.log, payload=self.tarball))

    def run(self, *args: str, env: Mapping[str, str] | None = None,
            path: str | None = None) -> subprocess.CompletedProcess[str]:
        full_env = {
            "PATH": path if path is not None else f"{self.shims}:/usr/bin:/bin",
            "TMPDIR": str(self.tmp),
            "HOME": str(self.root),
            "LC_ALL": "C",
        }
        full_env.update(env or {})
        return subprocess.run([BASH, str(SCRIPT), *args], cwd=self.cwd, env=full_env,
                              capture_output=True, text=True, timeout=60, check=False)

    def restricted_path(self) -> str:
        """A PATH holding only the checksum tools: no tar, xz, meson, ninja or downloader."""
        bin_dir = self.root / "restricted-bin"
        bin_dir.mkdir()
        for tool in CHECKSUM_TOOLS:
            found = shutil.which(tool)
            assert found is not None, tool
            (bin_dir / tool).symlink_to(found)
        return str(bin_dir)

    def assert_untouched(self) -> None:
        """Nothing unpacked, built or downloaded; the temp dir was cleaned up."""
        assert not self.log.exists(), self.log.read_text()
        assert list(self.tmp.iterdir()) == []
        assert list(self.cwd.iterdir()) == []
        assert list(self.prefix.iterdir()) == []
        assert not list(self.root.rglob("UNPACKED_MARKER"))


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


# --- checksum refusal --------------------------------------------------------------------


def test_script_pins_the_release_digest() -> None:
    text = SCRIPT.read_text()
    assert f"readonly TARBALL_SHA256={PINNED}\n" in text
    assert f"readonly BWRAP_VERSION={VERSION}\n" in text
    assert os.access(SCRIPT, os.X_OK)


def test_wrong_checksum_is_refused_before_unpacking(box: Sandbox) -> None:
    target = box.prefix / "lean-eval"
    result = box.run("--prefix", str(target), env={"BWRAP_TARBALL": str(box.tarball)})
    assert result.returncode == 1
    assert result.stdout == ""
    line = _one_line(result.stderr)
    assert PINNED in line
    assert _sha256(box.tarball) in line
    assert "refusing" in line
    assert "nothing unpacked" in line
    assert not target.exists()
    box.assert_untouched()


def test_every_missing_build_tool_is_named_before_anything_is_read(box: Sandbox) -> None:
    """One try names them all, with the packages to install, and reads no tarball."""
    for args in ((), ("--check",)):
        result = box.run(*args, env={"BWRAP_TARBALL": str(box.tarball), "BWRAP_URL": ""},
                         path=box.restricted_path() if not args else f"{box.root}/restricted-bin")
        assert result.returncode == 1
        line = _one_line(result.stderr)
        assert line.startswith("install_bwrap.sh: missing required tools: tar, xz, meson, "
                               "ninja, pkg-config, a C compiler"), line
        assert "libcap development files" in line
        assert line.endswith("apt-get install tar xz-utils meson ninja-build pkg-config gcc "
                             "libcap-dev"), line
        assert PINNED not in line
        box.assert_untouched()


def test_check_passes_where_every_tool_is_there(box: Sandbox) -> None:
    result = box.run("--check", env={"BWRAP_TARBALL": ""})
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    box.assert_untouched()


@pytest.mark.parametrize("content", [b"", PINNED.encode() + b"\n", b"\xfd7zXZ\x00truncated"])
def test_any_other_content_is_refused(box: Sandbox, content: bytes) -> None:
    bogus = box.root / "bubblewrap-0.12.0.tar.xz.other"
    bogus.write_bytes(content)
    result = box.run("--prefix", str(box.prefix), env={"BWRAP_TARBALL": str(bogus)})
    assert result.returncode == 1
    line = _one_line(result.stderr)
    assert hashlib.sha256(content).hexdigest() in line
    assert PINNED in line
    box.assert_untouched()


def test_dry_run_also_verifies_first(box: Sandbox) -> None:
    result = box.run("--dry-run", env={"BWRAP_TARBALL": str(box.tarball)})
    assert result.returncode == 1
    assert result.stdout == ""
    assert PINNED in _one_line(result.stderr)
    box.assert_untouched()


def test_downloaded_tarball_is_verified_too(box: Sandbox) -> None:
    """Without BWRAP_TARBALL the script fetches BWRAP_URL (a curl shim here) and still refuses."""
    box.use_curl_shim()
    url = "https://mirror.invalid/bubblewrap-0.12.0.tar.xz"
    result = box.run("--prefix", str(box.prefix), env={"BWRAP_URL": url, "BWRAP_TARBALL": ""})
    assert result.returncode == 1
    line = _one_line(result.stderr)
    assert url in line
    assert _sha256(box.tarball) in line
    assert PINNED in line
    # One curl call, of BWRAP_URL, into the private temp dir (which is gone again).
    (call,) = box.log.read_text().splitlines()
    words = call.split()
    assert words[0] == "curl"
    assert words[-2:] == ["--", url]
    target = words[words.index("-o") + 1]
    assert target.startswith(f"{box.tmp}/install_bwrap.")
    assert target.endswith("/bubblewrap-0.12.0.tar.xz")
    box.log.unlink()
    box.assert_untouched()


@pytest.mark.parametrize(("make", "message"), [
    (lambda root: root / "absent.tar.xz", "no such file"),
    (lambda root: root, "not a regular file"),
])
def test_unusable_tarball_path_is_a_clear_error(
        box: Sandbox, make: Callable[[Path], Path], message: str) -> None:
    given = make(box.root)
    result = box.run(env={"BWRAP_TARBALL": str(given)})
    assert result.returncode == 1
    line = _one_line(result.stderr)
    assert line == f"install_bwrap.sh: BWRAP_TARBALL={given}: {message}"
    box.assert_untouched()


# --- arguments ---------------------------------------------------------------------------


def test_help(box: Sandbox) -> None:
    for flag in ("--help", "-h"):
        result = box.run(flag)
        assert result.returncode == 0
        assert result.stderr == ""
        assert result.stdout.startswith("usage: install_bwrap.sh")
        for word in ("--prefix", "--dry-run", "--no-apparmor", "--apparmor-only",
                     "BWRAP_TARBALL", "BWRAP_URL", PINNED, "/usr/local"):
            assert word in result.stdout
    box.assert_untouched()


@pytest.mark.parametrize(("args", "needle"), [
    (["--bogus"], "unknown option '--bogus'"),
    (["--prefix", "/opt/x", "-x"], "unknown option '-x'"),
    (["stray"], "unexpected argument 'stray'"),
    (["--", "stray"], "unexpected argument 'stray'"),
    (["--prefix"], "--prefix needs a directory"),
    (["--prefix="], "--prefix must not be empty"),
    (["--prefix", ""], "--prefix must not be empty"),
    (["--prefix", "/opt/a*b"], "may contain only"),
    (["--prefix", "/opt/with space"], "may contain only"),
    (["--prefix", "/opt/{a,b}"], "may contain only"),
    (["--apparmor-only", "--no-apparmor"], "contradicts"),
    (["--print-apparmor-profile", "--dry-run"], "--dry-run applies to the install only"),
])
def test_usage_errors_exit_2_with_one_line(box: Sandbox, args: list[str], needle: str) -> None:
    # A wrong tarball is present too: usage errors come first and nothing is read.
    result = box.run(*args, env={"BWRAP_TARBALL": str(box.tarball)})
    assert result.returncode == 2
    assert result.stdout == ""
    line = _one_line(result.stderr)
    assert line.startswith("install_bwrap.sh: ")
    assert needle in line
    assert line.endswith("(see --help)")
    box.assert_untouched()


def test_apparmor_only_is_refused_without_the_restriction(box: Sandbox) -> None:
    if USERNS_SYSCTL.is_file() and USERNS_SYSCTL.read_text().strip() == "1":
        pytest.skip("the userns restriction is on here; the refusal cannot be shown")
    result = box.run("--apparmor-only", "--prefix", str(box.prefix))
    assert result.returncode == 1
    line = _one_line(result.stderr)
    assert line.startswith("install_bwrap.sh: refusing the AppArmor step: "
                           "kernel.apparmor_restrict_unprivileged_userns")
    assert line.endswith("not 1")
    box.assert_untouched()


# --- AppArmor profile --------------------------------------------------------------------


def test_template_has_one_placeholder_and_grants_userns() -> None:
    text = TEMPLATE.read_text()
    assert text.count("@BWRAP_PATH@") == 1
    rules = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    assert rules == [
        "abi <abi/4.0>,",
        "include <tunables/global>",
        "profile bwrap-lean-eval @BWRAP_PATH@ flags=(unconfined) {",
        "userns,",
        "}",
    ]


@pytest.mark.parametrize(("prefix", "binary"), [
    ("/opt/lean-eval", "/opt/lean-eval/bin/bwrap"),
    ("/opt/lean-eval/", "/opt/lean-eval/bin/bwrap"),
    ("/opt/x/../lean-eval_1.2+b", "/opt/lean-eval_1.2+b/bin/bwrap"),
    ("/", "/bin/bwrap"),
    (None, "/usr/local/bin/bwrap"),
])
def test_profile_renders_for_exactly_the_installed_path(
        box: Sandbox, prefix: str | None, binary: str) -> None:
    args = ["--print-apparmor-profile"] + ([] if prefix is None else ["--prefix", prefix])
    result = box.run(*args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    profile = result.stdout
    assert "@" not in profile
    assert profile.count(binary) == 1
    assert f"\nprofile bwrap-lean-eval {binary} flags=(unconfined) {{\n  userns,\n}}\n" in profile
    assert profile.endswith("}\n")
    box.assert_untouched()


def test_shellcheck_clean() -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    result = subprocess.run([shellcheck, "-x", str(SCRIPT)], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


# The real release's build is exercised by .github/workflows/ci.yml, which runs this installer
# on the downloaded 0.12.0 tarball; no release tarball can be fetched on the machines .ci/run uses.
