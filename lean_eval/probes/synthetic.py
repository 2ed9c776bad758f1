"""The probes' synthetic problems (never the benchmark's), scored by ``run-eval``'s own
pipeline (``scoring.batch.run_batch``)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from lean_eval.benchmark.catalog import Catalog, ProblemWorkspace, sha256
from lean_eval.benchmark.problem import parse_config
from lean_eval.probes.payloads import submission
from lean_eval.probes.registry import ProbeContext
from lean_eval.records import out_layout
from lean_eval.records.verdict import Verdict
from lean_eval.scoring import batch
from lean_eval.scoring.arguments import check_ids
from lean_eval.scoring.options import RunOptions, Tools

PERMITTED_AXIOMS = ("propext", "Quot.sound", "Classical.choice")


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
    """A catalog of ``problems``, their files written under ``root``."""
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
                         keep_work=True, scoring_root=lay.work, secret_files=ctx.secrets)
    batch.run_batch(check_ids(inputs), catalog, tools or ctx.tools, options,
                    ctx.caller_env if caller_env is None else caller_env, handed)
    scored = {}
    for key, at in finished.items():
        sid, pid = key.split("/")
        verdict = Verdict.model_validate_json(
            out_layout.verdict_path(lay.out, sid, pid).read_bytes())
        log = out_layout.log_path(lay.out, sid, pid)
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
