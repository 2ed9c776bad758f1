"""Sandbox and environment probes: synthetic submissions scored through the real scoring path.

Invariants:
- A probe scores a synthetic problem packaged here (never the benchmark's) with
  :func:`lean_eval.batch.run_batch`: the same intake, workspace, driver, ``COMPARATOR_BWRAP``
  wrapper, masks, PATH filtering and environment allowlist as ``run-eval``.
- Each submitted file carries its IO twice: a real Lean ``#eval`` and a ``-- standin-io:`` line
  (design §7), so a probe means the same on a real toolchain and on the stand-in.
- Payloads write evidence files; a probe passes only on those and host-side state (files,
  sockets, ``/proc``), never on what a build printed or on the verdict text alone (printed
  markers and leaked values in the log can only make a probe fail).
- :func:`run_probes` never raises for a probe: an exception becomes status ``error``. Nothing
  here prints, parses options or reads the environment: the scripts' command line is
  ``lean_eval/cli/probe_script.py``, whose environment defaults are click's, as for the CLI.
"""

from __future__ import annotations

import base64
import importlib
import json
import secrets
import shlex
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from lean_eval import batch
from lean_eval.catalog import Catalog, ProblemWorkspace, sha256
from lean_eval.errors import LeanEvalError
from lean_eval.inputs import check_ids
from lean_eval.probe_result import ProbeCheck, ProbeResult
from lean_eval.problem import parse_config
from lean_eval.run import RunOptions, Tools
from lean_eval.verdict import Verdict

PY = "/usr/bin/python3"  # payload interpreter; visible in Lake's sandbox through --ro-bind / /
PERMITTED_AXIOMS = ("propext", "Quot.sound", "Classical.choice")
PROBE_NAMES = ("sandbox_engaged", "env_dump", "tool_path", "artifact_tamper", "comparator")


class ProbeContext(NamedTuple):
    """What a probe runs with."""

    tools: Tools  # resolved before any probe runs; probes never resolve their own
    caller_env: Mapping[str, str]  # the caller's environment as run-eval would pass it on
    scratch: Path  # a fresh directory the probe owns
    timeout: float = 300.0


def _lazy(name: str) -> Callable[[ProbeContext], ProbeResult]:
    def run(ctx: ProbeContext) -> ProbeResult:
        module = importlib.import_module(f"lean_eval.probes.{name}")
        result: ProbeResult = module.run(ctx)
        return result

    run.__name__ = name
    return run


PROBES: dict[str, Callable[[ProbeContext], ProbeResult]] = {n: _lazy(n) for n in PROBE_NAMES}


def proves(name: str) -> str:
    """The one-line claim of probe ``name`` (its module's ``PROVES``)."""
    try:
        return str(importlib.import_module(f"lean_eval.probes.{name}").PROVES)
    except (ImportError, AttributeError):
        return ""


def judge(name: str, claim: str, checks: Sequence[ProbeCheck]) -> ProbeResult:
    """``pass`` iff there is at least one check and every check is ok."""
    failed = [c.name for c in checks if not c.ok]
    if not checks:
        return ProbeResult(name=name, status="error", seconds=0.0, proves=claim, checks=(),
                           message="the probe produced no checks")
    message = (f"{len(checks)} check(s) passed" if not failed
               else f"{len(failed)} of {len(checks)} check(s) failed: {', '.join(failed)}")
    return ProbeResult(name=name, status="fail" if failed else "pass", seconds=0.0,
                       proves=claim, checks=tuple(checks), message=message)


def run_probes(ctx: ProbeContext, names: Sequence[str] | None = None
               ) -> tuple[ProbeResult, ...]:
    """Run ``names`` (default: every probe) in order, each in its own sub-scratch, timed."""
    results = []
    for name in names or PROBE_NAMES:
        started = time.monotonic()
        claim = ""
        try:
            claim = proves(name) if name in PROBES else ""
            if name not in PROBES:
                raise LeanEvalError(f"unknown probe {name!r}; known: {', '.join(PROBE_NAMES)}")
            ctx.scratch.mkdir(parents=True, exist_ok=True)
            own = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=ctx.scratch))
            own.chmod(0o755)
            result = PROBES[name](ctx._replace(scratch=own))
        except Exception as exc:  # noqa: BLE001 - a probe that cannot run is an error result
            result = ProbeResult(name=name, status="error", seconds=0.0, proves=claim,
                                 checks=(), message=f"could not run: {type(exc).__name__}: {exc}")
        results.append(result.model_copy(
            update={"seconds": round(time.monotonic() - started, 3)}))
    return tuple(results)


# --- payloads: both forms of one shell command (design §7) ----------------------------------------


def lean_string(text: str) -> str:
    """``text`` as a Lean string literal."""
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
               .replace("\t", "\\t"))
    return f'"{escaped}"'


def io_payload(command: str) -> str:
    """Run ``command`` with ``/bin/sh -c`` while the file is elaborated: a real Lean ``#eval``
    and the stand-in's ``-- standin-io:`` line."""
    if "\n" in command:
        raise ValueError("a payload command is one line")
    return (f"-- standin-io: {command}\n"
            "#eval show IO Unit from do\n"
            f'  let out ← IO.Process.output {{ cmd := "/bin/sh", args := #["-c", '
            f"{lean_string(command)}] }}\n"
            "  IO.println out.stdout\n")


def python_command(code: str, spec: Mapping[str, object]) -> str:
    """A shell command running ``code`` under :data:`PY` with ``sys.argv[2]`` = JSON ``spec``."""
    blob = base64.b64encode(code.encode()).decode("ascii")
    return (f"{PY} -c 'import base64,sys;exec(base64.b64decode(sys.argv[1]))' {blob} "
            + shlex.quote(json.dumps(dict(spec), sort_keys=True)))


def submission(declarations: str, *payloads: str) -> str:
    """A ``Submission.lean``: ``declarations`` inside ``namespace Submission``, then payloads."""
    return "\n".join(["-- lean-eval probe: synthetic submission", "namespace Submission", "",
                      declarations.strip(), "", "end Submission", "", *payloads]) + "\n"


def token() -> str:
    """A unique marker for one probe run."""
    return "lean-eval-probe-" + secrets.token_hex(8)


# --- the packaged synthetic problems --------------------------------------------------------------

_LAKEFILE = """# lean-eval probe workspace (synthetic, generated in code).
name = "{pid}"
defaultTargets = ["Challenge"]

[[lean_lib]]
name = "Challenge"

[[lean_lib]]
name = "Solution"

[[lean_lib]]
name = "Submission"
globs = ["Submission", "Submission.+"]
"""


def synthetic_problem(pid: str, holes: Sequence[tuple[str, str]], challenge: str,
                      solution: str, toolchain_name: str) -> ProblemWorkspace:
    """A trusted workspace laid out as design §4.2, built in memory (holes: (name, kind))."""
    config: dict[str, object] = {
        "challenge_module": "Challenge", "solution_module": "Solution",
        "theorem_names": [n for n, k in holes if k == "theorem"]}
    defs = [n for n, k in holes if k != "theorem"]
    if defs:
        config["definition_names"] = defs
    config |= {"permitted_axioms": list(PERMITTED_AXIOMS), "enable_nanoda": False}
    config_raw = (json.dumps(config, indent=2) + "\n").encode()
    manifest = {"version": "1.1.0", "packagesDir": ".lake/packages", "packages": [],
                "name": pid, "lakeDir": ".lake"}
    trusted = {
        "Challenge.lean": challenge.encode(), "Solution.lean": solution.encode(),
        "config.json": config_raw, "lakefile.toml": _LAKEFILE.format(pid=pid).encode(),
        "lake-manifest.json": (json.dumps(manifest) + "\n").encode(),
        "lean-toolchain": f"{toolchain_name}\n".encode(),
        "README.md": f"# `{pid}`: a lean-eval probe problem (synthetic)\n".encode(),
    }
    starter = submission("-- starter: supply " + ", ".join(n for n, _ in holes))
    return ProblemWorkspace.model_validate({
        "problem": {"id": pid, "title": f"probe problem {pid}", "status": "probe",
                    "visible": False, "statement_revision": 1, "tags": ["probe"],
                    "holes": [{"name": n, "kind": k} for n, k in holes],
                    "submitter": "lean-eval probes"},
        "config": parse_config(config_raw, f"{pid}/config.json"), "config_raw": config_raw,
        "trusted": trusted, "starter": {"Submission.lean": starter.encode()},
        "digests": {name: sha256(data) for name, data in trusted.items()}})


def probe_true(toolchain_name: str) -> ProblemWorkspace:
    """``theorem probe_true : True``: the problem every sandbox probe scores."""
    return synthetic_problem(
        "probe_true", [("probe_true", "theorem")],
        "/-! lean-eval probe challenge (trusted, synthetic). -/\n\n"
        "theorem probe_true : True := by sorry\n",
        "import Submission\n\n/-! lean-eval probe bridge (trusted, synthetic). -/\n\n"
        "theorem probe_true : True := by exact Submission.probe_true\n", toolchain_name)


def probe_def(toolchain_name: str) -> ProblemWorkspace:
    """A definition hole and a theorem whose statement mentions it."""
    return synthetic_problem(
        "probe_def", [("probe_val", "def"), ("probe_val_eq", "theorem")],
        "/-! lean-eval probe challenge (trusted, synthetic). -/\n\n"
        "def probe_val : Nat := sorry\n\ntheorem probe_val_eq : probe_val = 2 := by sorry\n",
        "import Submission\n\n/-! lean-eval probe bridge (trusted, synthetic). -/\n\n"
        "@[reducible] noncomputable def probe_val : Nat := Submission.probe_val\n\n"
        "theorem probe_val_eq : probe_val = 2 := by exact Submission.probe_val_eq\n",
        toolchain_name)


VALID_TRUE = "theorem probe_true : True := trivial"


def synthetic_catalog(root: Path, problems: Sequence[ProblemWorkspace],
                      toolchain_name: str) -> Catalog:
    """A catalog of ``problems`` rooted at ``root`` (where their files are written for reading)."""
    for p in problems:
        for name, data in p.trusted.items():
            target = root / "workspaces" / p.problem.id / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return Catalog(root=root.resolve(), commit=None, toolchain_name=toolchain_name,
                   problems={p.problem.id: p for p in problems}, shared_packages=None)


# --- scoring a synthetic batch ---------------------------------------------------------------


class Layout(NamedTuple):
    """Where one synthetic batch lives: inputs, verdicts and scoring directories."""

    subs: Path
    out: Path
    work: Path

    def workspace(self, sid: str, pid: str) -> Path:
        """The kept scoring workspace of a pair (known before the run)."""
        return self.work / sid / pid / "workspace"


def layout(base: Path) -> Layout:
    """Fresh ``subs``/``out``/``work`` directories under ``base``."""
    lay = Layout(base / "subs", base / "out", base / "work")
    for path in lay:
        path.mkdir(mode=0o755, parents=True)
    return Layout(*(p.resolve() for p in lay))


class Scored(NamedTuple):
    """One scored pair: its verdict, kept workspace, raw log, and when the verdict was handed."""

    verdict: Verdict
    workspace: Path
    log: str
    finished: float  # time.time() when run_batch handed over the verdict


def score(ctx: ProbeContext, lay: Layout, catalog: Catalog,
          submissions: Mapping[str, Mapping[str, Mapping[str, str]]], *,
          tools: Tools | None = None,
          caller_env: Mapping[str, str] | None = None) -> dict[str, Scored]:
    """Score ``{sid: {pid: {relpath: text}}}`` exactly as run-eval would; keyed ``sid/pid``."""
    inputs = []
    for sid, problems in submissions.items():
        for pid, files in problems.items():
            for rel, text in files.items():
                target = lay.subs / sid / pid / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
        inputs.append(lay.subs / sid)
    finished: dict[str, float] = {}

    def handed(verdict: Verdict) -> None:
        finished[f"{verdict.submission.id}/{verdict.problem.id}"] = time.time()

    options = RunOptions(out_dir=lay.out, timeout=ctx.timeout, work_dir=lay.work,
                         keep_work=True, scoring_root=lay.work)
    batch.run_batch(check_ids(inputs), catalog, tools or ctx.tools, options,
                    ctx.caller_env if caller_env is None else caller_env, handed)
    scored = {}
    for key, at in finished.items():
        sid, pid = key.split("/")
        verdict = Verdict.model_validate_json((lay.out / sid / f"{pid}.json").read_bytes())
        log = lay.out / sid / f"{pid}.log"
        scored[key] = Scored(verdict, lay.workspace(sid, pid),
                             log.read_text(encoding="utf-8", errors="replace")
                             if log.is_file() else "", at)
    return scored


def read_evidence(path: Path) -> dict[str, object] | None:
    """A payload's JSON evidence file, or None when the payload left none (or garbage)."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def summary_line(scored: Scored) -> str:
    """The verdict of a pair in a few words, for evidence strings."""
    v = scored.verdict
    return f"{v.verdict}/{v.execution} ({v.reason.code}: {v.reason.message[:160]})"


# --- for the scripts' command line (lean_eval/cli/probe_script.py) ----------------------------


def pinned_toolchain_name() -> str:
    """The ``lean-toolchain`` of the checkout this package runs from (else the current dir)."""
    for base in (Path(__file__).resolve().parent.parent, Path.cwd()):
        pin = base / "lean-toolchain"
        if pin.is_file():
            return pin.read_text(encoding="utf-8").strip()
    return ""
