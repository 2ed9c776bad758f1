"""`lake comparator` of the stand-in toolchain (the contract of reference/lake-comparator.md).

This is the outer, unsandboxed process. Every step that runs project code is spawned as
`<which env> -i <sandbox> <Lake's bubblewrap arguments> -- <command>` with cwd = the project.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

from standin import tools
from standin.lake import BUILD_DIR, SYSROOT

TRACE_FILE = os.path.join(".lake", "standin-trace.jsonl")
NO_SANDBOX_WARNING = "WARNING: Sandbox disabled, this run is not trustworthy."
MANIFEST_MESSAGE = (
    "'{dir}' has no `lake-manifest.json`, and `lake comparator` resolves dependencies inside a "
    "sandbox that cannot write to the project directory. Run `lake build` there first."
)
NANODA_BOTH_MESSAGE = (
    "cannot use `enable_nanoda` and `external_kernels` at the same time; "
    "register nanoda in the list instead"
)
NOTHING_MESSAGE = "nothing to check: the configuration names no theorems or definitions"
# `--paranoid`: every checker the release bundles, in this order, before `Lean default`:
# (kernel name, program in <sysroot>/bin, arguments before the export or nanoda config path).
PARANOID_CHECKERS = (
    ("Lean paranoid", "leanchecker-paranoid", ("--silent", "--from-export")),
    ("lean4lean", "lean4lean", ()),
    ("nanoda", "nanoda_bin", ()),
    ("con-leche", "con-leche", ()),
    ("con-ron", "con-ron", ()),
)


class Exit(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def phase(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


# ---------------------------------------------------------------------------------------------
# tool lookup, the way Lake does it


def is_executable_file(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def which(name: str, path: str) -> str | None:
    """First executable regular file `<entry>/<name>` along `path`, in order (an empty entry
    is the current directory, a relative entry is relative to it); absolute result. An empty
    or unset PATH finds nothing."""
    for entry in path.split(os.pathsep) if path else []:
        candidate = os.path.abspath(os.path.join(entry or ".", name))
        if is_executable_file(candidate):
            return candidate
    return None


def resolve_program(name: str, path: str) -> str | None:
    """A name with a `/` is a path (must be an executable file); otherwise looked up on PATH."""
    if "/" in name:
        return os.path.abspath(name) if is_executable_file(name) else None
    return which(name, path)


def sandbox_name() -> str:
    return os.environ.get("COMPARATOR_BWRAP") or "bwrap"


def resolve_sandbox(path: str) -> str | None:
    """`COMPARATOR_BWRAP` as-is when it contains a `/`, else looked up on PATH; else `bwrap`."""
    name = sandbox_name()
    if "/" in name:
        return name if is_executable_file(name) else None
    return which(name, path)


def missing_sandbox(name: str) -> Exit:
    return Exit(
        2,
        f"could not find the sandbox `{name}`: set `COMPARATOR_BWRAP` to a bubblewrap executable "
        "or put `bwrap` on PATH. There is no unsandboxed mode.",
    )


def missing_tool(name: str) -> Exit:
    return Exit(2, f"could not find `{name}` on PATH; `lake comparator` needs it")


# ---------------------------------------------------------------------------------------------
# arguments and configuration


def parse_args(argv: list[str]) -> dict:
    opts: dict = {"config": None, "paranoid": False, "no_sandbox": False,
                  "challenge_from_export": None, "solution_from_export": None}
    valued = {"--config": "config", "--challenge-from-export": "challenge_from_export",
              "--solution-from-export": "solution_from_export"}
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, eq, value = arg.partition("=")
        if key in valued:
            if not eq:
                if i + 1 >= len(argv):
                    raise Exit(2, f"missing argument to `{key}`")
                i += 1
                value = argv[i]
            opts[valued[key]] = value
        elif arg == "--paranoid":
            opts["paranoid"] = True
        elif arg == "--inadvisably-no-sandbox":
            opts["no_sandbox"] = True
        else:
            raise Exit(2, f"unexpected argument `{arg}` to `lake comparator`")
        i += 1
    return opts


def _reject_constant(name: str) -> None:
    raise ValueError(f"invalid JSON number {name}")


def parse_config(text: str, path: str) -> dict:
    def bad(msg: str) -> Exit:
        return Exit(2, f"malformed configuration in '{path}': {msg}")

    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except ValueError as e:
        raise bad(str(e)) from None
    if not isinstance(data, dict):
        raise bad("expected a JSON object")

    def get(key: str, required: bool, default: object = None) -> object:
        if key not in data or (data[key] is None and not required):
            if required:
                raise bad(f"property not found: {key}")
            return default
        return data[key]

    def string(key: str) -> str:
        v = get(key, True)
        if not isinstance(v, str):
            raise bad(f"'{key}': expected a string")
        return v

    def strings(key: str, required: bool) -> list[str]:
        v = get(key, required, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise bad(f"'{key}': expected an array of strings")
        return v

    cfg = {
        "challenge_module": string("challenge_module"),
        "solution_module": string("solution_module"),
        "theorem_names": strings("theorem_names", True),
        "definition_names": strings("definition_names", False),
        "permitted_axioms": strings("permitted_axioms", True),
    }
    nanoda = get("enable_nanoda", False, False)
    if type(nanoda) is not bool:
        raise bad("'enable_nanoda': expected a boolean")
    cfg["enable_nanoda"] = nanoda
    kernels = get("external_kernels", False, {})
    if not isinstance(kernels, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in kernels.values()
    ):
        raise bad("'external_kernels': expected an object mapping names to arrays of strings")
    cfg["external_kernels"] = kernels
    return cfg


# ---------------------------------------------------------------------------------------------
# sandboxed steps


class Runner:
    def __init__(self, project: str, path: str, no_sandbox: bool, trace: dict) -> None:
        self.project = project
        self.path = path
        self.no_sandbox = no_sandbox
        self.trace = trace

    def bwrap_args(self, step: str, ro: list[str], rw: list[str],
                   setenv: list[tuple[str, str]], chdir: str) -> list[str]:
        args = ["--ro-bind", "/", "/", "--tmpfs", "/home", "--tmpfs", "/root",
                "--tmpfs", "/run/user", "--tmpfs", "/tmp", "--dir", "/tmp/home",
                "--dev", "/dev", "--proc", "/proc", "--clearenv"]
        if step != "resolve":
            args += ["--tmpfs", "/run", "--tmpfs", "/var"]
        for p in ro:
            args += ["--ro-bind", p, p]
        for p in rw:
            args += ["--bind", p, p]
        for name, value in setenv:
            args += ["--setenv", name, value]
        args += ["--setenv", "HOME", "/tmp/home", "--unshare-all", "--die-with-parent",
                 "--new-session"]
        if step == "resolve":
            args += ["--share-net"]
        return [*args, "--chdir", chdir]

    def step(self, step: str, command: list[str], *, ro: list[str], rw: list[str] = (),
             setenv: list[tuple[str, str]], chdir: str | None = None, stdout=None) -> int:
        """Run one step and return its exit status (128+n when killed by signal n)."""
        chdir = chdir or self.project
        if self.no_sandbox:
            argv = list(command)
            env = dict(os.environ, **dict(setenv))
            cwd = chdir
        else:
            env_exe = which("env", self.path)  # Lake looks both up again for every spawn
            if env_exe is None:
                raise missing_tool("env")
            sandbox = resolve_sandbox(self.path)
            if sandbox is None:
                raise missing_sandbox(sandbox_name())
            argv = [env_exe, "-i", sandbox,
                    *self.bwrap_args(step, ro, list(rw), setenv, chdir), "--", *command]
            env = None
            cwd = self.project
        self.trace["sandbox_invocations"].append(argv)
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            proc = subprocess.run(argv, cwd=cwd, env=env, stdout=stdout, check=False)
        except OSError as e:
            raise Exit(2, f"could not spawn `{argv[0]}`: {e}") from None
        return exit_status(proc.returncode)


# ---------------------------------------------------------------------------------------------
# comparison of the two exports


def load_export(path: str) -> dict[str, dict]:
    try:
        _, consts = tools.read_export(path)
    except (OSError, ValueError) as e:
        raise Exit(1, f"could not read export file '{path}': {e}") from None
    out: dict[str, dict] = {}
    for c in consts:
        out.setdefault(c["name"], c)
    return out


def _as(kind: str, c: dict) -> dict:
    """An `instance` is a theorem when its type is a Prop, else a definition; the model has no
    types, so an instance has the kind of the check it is named in (elab.KINDS)."""
    return dict(c, kind=kind) if c["kind"] == "instance" else c


def compare(cfg: dict, challenge: dict[str, dict], solution: dict[str, dict]) -> None:
    for name in cfg["theorem_names"]:
        c, s = challenge.get(name), solution.get(name)
        if c is None:
            raise Exit(1, f"Const not found in challenge: '{name}'")
        if s is None:
            raise Exit(1, f"Const not found in solution: '{name}'")
        c, s = _as("theorem", c), _as("theorem", s)
        if c["kind"] != s["kind"]:
            raise Exit(1, f"Challenge and solution constant kind don't match: '{name}'")
        if s["kind"] != "theorem":
            raise Exit(1, f"Solution constant is not a theorem: '{name}'")
        if c["type"] != s["type"]:
            raise Exit(1, f"Challenge and solution theorem statement do not match: '{name}'")
    for name in cfg["definition_names"]:
        c, s = challenge.get(name), solution.get(name)
        if c is None:
            raise Exit(1, f"Const not found in challenge: '{name}'")
        if s is None:
            raise Exit(1, f"Const not found in solution: '{name}'")
        c, s = _as("definition", c), _as("definition", s)
        if c["kind"] != s["kind"]:
            raise Exit(1, f"Challenge and solution constant kind don't match: '{name}'")
        if c["kind"] != "definition":
            raise Exit(1, f"Challenge constant is not a definition: '{name}'")
        if c["type"] != s["type"]:
            raise Exit(1, f"Const does not match between challenge and target '{name}'")
    # the solution export holds exactly the targets and what they use
    for c in solution.values():
        if c["kind"] == "axiom" and c["name"] not in cfg["permitted_axioms"]:
            raise Exit(1, f"Illegal axiom detected: '{c['name']}'")


# ---------------------------------------------------------------------------------------------
# the run


def run(argv: list[str], trace: dict, tmp_holder: list[str]) -> int:
    opts = parse_args(argv)
    config_path = opts["config"] if opts["config"] is not None else "comparator.json"
    trace["config_path"] = config_path
    if not sys.platform.startswith("linux"):
        raise Exit(2, "`lake comparator` is only supported on Linux")
    project = os.getcwd()
    try:
        with open(config_path, "rb") as f:
            raw = f.read()
        trace["config_text"] = raw.decode("utf-8", errors="replace")
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise Exit(2, f"could not read the configuration: {e}") from None
    cfg = parse_config(text, config_path)
    if not cfg["theorem_names"] and not cfg["definition_names"]:
        raise Exit(2, NOTHING_MESSAGE)
    if cfg["enable_nanoda"] and cfg["external_kernels"]:
        raise Exit(2, NANODA_BOTH_MESSAGE)
    kernels = dict(cfg["external_kernels"])
    if cfg["enable_nanoda"]:
        kernels["nanoda"] = ["nanoda_bin"]

    path = os.environ.get("PATH", "")
    resolved = trace["resolved"]
    for name in sorted(kernels):
        command = kernels[name]
        if not command:
            raise Exit(2, f"`{name}` has an empty command")
        exe = resolve_program(command[0], path)
        if exe is None:
            raise Exit(2, f"`{name}` kernel `{command[0]}` was not found")
        resolved["kernels"][name] = [exe, *command[1:]]
    order = sorted(kernels)
    if opts["paranoid"]:
        bundled = []
        for name, program, args in PARANOID_CHECKERS:
            if name not in kernels:  # a configured kernel of the same name runs once, as set
                exe = os.path.join(SYSROOT, "bin", program)
                if not is_executable_file(exe):
                    raise Exit(2, f"`{name}` kernel `{exe}` was not found")
                resolved["kernels"][name] = [exe, *args]
            bundled.append(name)
        order = bundled + [name for name in order if name not in bundled]
    for key in ("challenge_from_export", "solution_from_export"):
        if opts[key] is not None and not os.path.exists(opts[key]):
            raise Exit(2, f"'{opts[key]}' does not exist")
    if not os.path.isfile(os.path.join(project, "lake-manifest.json")):
        raise Exit(2, MANIFEST_MESSAGE.format(dir=project))
    if not opts["no_sandbox"]:
        resolved["env"] = which("env", path)
        if resolved["env"] is None:
            raise missing_tool("env")
    resolved["git"] = which("git", path)
    if resolved["git"] is None:
        raise missing_tool("git")
    if opts["no_sandbox"]:
        sys.stderr.write(NO_SANDBOX_WARNING + "\n")
        sys.stderr.flush()
    else:
        resolved["sandbox"] = resolve_sandbox(path)
        if resolved["sandbox"] is None:
            raise missing_sandbox(sandbox_name())

    runner = Runner(project, path, opts["no_sandbox"], trace)
    tmp = tempfile.mkdtemp(prefix="lake-comparator-")
    tmp_holder.append(tmp)
    lake_dir = os.path.join(project, ".lake")
    os.makedirs(lake_dir, exist_ok=True)
    bin_dir = os.path.join(SYSROOT, "bin")
    lean_path = ":".join([os.path.join(project, BUILD_DIR), os.path.join(SYSROOT, "lib", "lean")])
    panic = ("LEAN_ABORT_ON_PANIC", "1")

    def checked(rc: int) -> None:
        if rc != 0:
            raise Exit(1, f"Child exited with {rc}")

    phase("Resolving dependencies")
    checked(runner.step("resolve", [os.path.join(bin_dir, "lake"), "env", resolved["git"], "--version"],
                        ro=[project, SYSROOT], rw=[lake_dir], setenv=[("PATH", path), panic]))

    targets = cfg["theorem_names"] + cfg["definition_names"]
    exports: dict[str, str] = {}
    for side, module in (("challenge", cfg["challenge_module"]), ("solution", cfg["solution_module"])):
        given = opts[f"{side}_from_export"]
        if given is not None:
            exports[side] = os.path.abspath(given)
            continue
        phase(f"Building {module}")
        checked(runner.step("build", [os.path.join(bin_dir, "lake"), "build", module],
                            ro=[project, SYSROOT], rw=[lake_dir], setenv=[("PATH", path), panic]))
        phase(f"Exporting #[{', '.join(targets)}] from {module}")
        exports[side] = os.path.join(tmp, f"{side}.ndjson")
        with open(exports[side], "wb") as out:
            checked(runner.step("export", [os.path.join(bin_dir, "leanexport"), module, "--", *targets],
                                ro=[project, SYSROOT],
                                setenv=[("PATH", path), ("LEAN_PATH", lean_path), panic], stdout=out))

    compare(cfg, load_export(exports["challenge"]), load_export(exports["solution"]))

    export = exports["solution"]
    runs: list[tuple[str, list[str], list[str]]] = []
    for i, name in enumerate(order):
        command = resolved["kernels"][name]
        if "noda" in name:
            handoff = os.path.join(tmp, f"kernel-{i}-config.json")
            with open(handoff, "w", encoding="utf-8") as f:
                json.dump({
                    "export_file_path": export,
                    "nat_extension": True,
                    "num_threads": 4,
                    "permitted_axioms": cfg["permitted_axioms"],
                    "string_extension": True,
                    "unpermitted_axiom_hard_error": True,
                    "use_stdin": False,
                }, f, indent=2, sort_keys=True)
            runs.append((name, [*command, handoff], [handoff, export, command[0], SYSROOT]))
        else:
            runs.append((name, [*command, export], [export, command[0], SYSROOT]))
    checker = os.path.join(bin_dir, "leanchecker")
    runs.append(("Lean default", [checker, "--silent", "--from-export", export],
                 [export, checker, SYSROOT]))

    failure: tuple[str, int] | None = None
    for name, command, ro in runs:
        phase(f"Running {name} kernel on solution")
        rc = runner.step("kernel", command, ro=ro, setenv=[panic],
                         chdir=tmp if opts["no_sandbox"] else "/tmp", stdout=subprocess.DEVNULL)
        if rc == 0:
            phase(f"{name} kernel accepts the solution")
        else:
            phase(f"{name} kernel rejected the solution")
            failure = failure or (name, rc)
    if failure is not None:
        raise Exit(1, f"{failure[0]} exited with {failure[1]}")
    phase("Your solution is okay!")
    return 0


# A build can write .lake: every component of the trace's path is opened without following a
# link (and the file must be a regular one), so a planted link never redirects this write.
_NOFOLLOW = os.O_NOFOLLOW


def _open_trace(cwd: str) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | _NOFOLLOW
    project = os.open(cwd, flags)
    try:
        lake_name, file_name = os.path.split(TRACE_FILE)
        try:
            os.mkdir(lake_name, 0o755, dir_fd=project)
        except FileExistsError:
            pass
        lake = os.open(lake_name, flags, dir_fd=project)
    finally:
        os.close(project)
    try:
        fd = os.open(file_name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
                     | os.O_CLOEXEC | _NOFOLLOW, 0o644, dir_fd=lake)
    finally:
        os.close(lake)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{TRACE_FILE} is not a regular file")
    return fd


def write_trace(trace: dict) -> None:
    try:
        with os.fdopen(_open_trace(trace["cwd"]), "a", encoding="utf-8") as f:
            f.write(json.dumps(trace) + "\n")
    except OSError as e:
        sys.stderr.write(f"standin: could not write the trace: {e}\n")


def _on_signal(signum: int, _frame: object) -> None:
    raise Exit(128 + signum)


def main(argv: list[str]) -> int:
    trace: dict = {
        "argv": list(sys.argv),
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "config_path": None,
        "config_text": None,
        "resolved": {"env": None, "git": None, "sandbox": None, "kernels": {}},
        "sandbox_invocations": [],
        "exit_code": None,
    }
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    tmp: list[str] = []
    code = 1
    try:
        code = run(argv, trace, tmp)
    except Exit as e:
        if e.message:
            sys.stderr.write(f"error: {e.message}\n")
        code = e.code
    finally:
        trace["exit_code"] = code
        write_trace(trace)
        for d in tmp:
            shutil.rmtree(d, ignore_errors=True)
        sys.stdout.flush()
        sys.stderr.flush()
    return code
