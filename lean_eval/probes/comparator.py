"""Probe ``comparator``: the installed toolchain accepts and rejects what it must (``CASES``),
and never accepts without NanoDa or without a working sandbox."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from lean_eval.benchmark.catalog import Catalog
from lean_eval.benchmark.toolchain import Toolchain, resolve_toolchain
from lean_eval.errors import SetupError, ToolchainError
from lean_eval.probes import payloads, registry, synthetic
from lean_eval.records.probe_result import ProbeCheck, ProbeResult
from lean_eval.sandbox.bubblewrap import BwrapInfo
from lean_eval.scoring.options import Tools

NAME = "comparator"
PROVES = ("the comparator accepts a valid proof and a right definition, rejects a statement "
          "mismatch, sorry, a used axiom and a wrong-typed definition, and can never accept "
          "without NanoDa or without a working sandbox")

DEF_RIGHT = """def probe_val : Nat := 2

theorem probe_val_eq : probe_val = 2 := rfl"""
DEF_WRONG_TYPE = """def probe_val : Int := 2

theorem probe_val_eq : probe_val = 2 := rfl"""
AXIOM = """axiom probe_cheat : False

theorem probe_true : True := False.elim probe_cheat"""
# submission id -> (problem, declarations, expected verdict)
CASES: Mapping[str, tuple[str, str, str]] = {
    "valid": ("probe_true", synthetic.VALID_TRUE, "accepted"),
    "statement_mismatch": ("probe_true", "theorem probe_true : False → True := fun _ => trivial",
                           "rejected"),
    "sorry": ("probe_true", "theorem probe_true : True := sorry", "rejected"),
    "user_axiom": ("probe_true", AXIOM, "rejected"),
    "def_right": ("probe_def", DEF_RIGHT, "accepted"),
    "def_wrong_type": ("probe_def", DEF_WRONG_TYPE, "rejected"),
}
FAKE_BWRAP = """#!/bin/sh
# lean-eval comparator probe: a sandbox executable that cannot create a sandbox
echo "bwrap: lean-eval probe: cannot create the sandbox (deliberately broken)" >&2
exit 1
"""


def _without_nanoda(root: Path, into: Path) -> Path:
    """A copy of the toolchain's layout without ``bin/nanoda_bin`` (entries are symlinks)."""
    (into / "bin").mkdir(parents=True)
    for entry in root.iterdir():
        if entry.name != "bin":
            (into / entry.name).symlink_to(entry)
    for tool in (root / "bin").iterdir():
        if tool.name != "nanoda_bin":
            (into / "bin" / tool.name).symlink_to(tool)
    return into


def run(ctx: registry.ProbeContext) -> ProbeResult:
    name = ctx.tools.toolchain.name
    catalog = synthetic.synthetic_catalog(ctx.scratch / "benchmark",
                                      [synthetic.probe_true(name), synthetic.probe_def(name)], name)
    check = ProbeCheck
    scored = synthetic.score(ctx, synthetic.layout(ctx.scratch / "cases"), catalog, {
        sid: {pid: {"Submission.lean": payloads.submission(decls)}}
        for sid, (pid, decls, _) in CASES.items()})
    checks = []
    for sid, (pid, _, expected) in CASES.items():
        pair = scored.get(f"{sid}/{pid}")
        got = pair.verdict.verdict if pair else "missing"
        checks.append(check(name=f"{sid}_{expected}", ok=got == expected,
                            evidence=f"{pid}: {synthetic.summary_line(pair) if pair else got}"))
    copy = _without_nanoda(ctx.tools.toolchain.root, ctx.scratch / "toolchain-without-nanoda")
    try:
        resolve_toolchain(copy, {}, name)
        refused = "resolve_toolchain accepted a toolchain without bin/nanoda_bin"
    except ToolchainError as exc:
        refused = ""
        checks.append(check(name="toolchain_without_nanoda_refused", ok=True,
                            evidence=f"resolve_toolchain refused it: {exc}"))
    if refused:
        checks.append(check(name="toolchain_without_nanoda_refused", ok=False, evidence=refused))
    root = ctx.tools.toolchain.root  # a NanoDa path that does not exist, outside every scratch
    missing = root / "bin" / f"nanoda_bin.missing-{payloads.token()}"
    broken = [("missing_nanoda_never_accepted", ctx.tools._replace(toolchain=Toolchain(
        name=name, root=root, lake=ctx.tools.toolchain.lake, nanoda=missing)))]
    fake = ctx.scratch / "broken-sandbox" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(FAKE_BWRAP)
    fake.chmod(0o755)
    broken.append(("unusable_sandbox_never_accepted", ctx.tools._replace(
        bwrap=BwrapInfo(path=fake, version=ctx.tools.bwrap.version,
                        minimum=ctx.tools.bwrap.minimum))))
    for label, tools in broken:
        checks.append(_never_accepted(ctx, catalog, label, tools))
    return registry.judge(NAME, PROVES, checks)


def _never_accepted(ctx: registry.ProbeContext, catalog: Catalog, label: str,
                    tools: Tools) -> ProbeCheck:
    """Score the valid proof with a broken installation: anything but ``accepted`` passes."""
    broken = (f"nanoda {tools.toolchain.nanoda} (exists: {tools.toolchain.nanoda.exists()})"
              if label.startswith("missing") else f"bwrap {tools.bwrap.path} (exits 1)")
    try:
        scored = synthetic.score(ctx, synthetic.layout(ctx.scratch / label), catalog,
                             {"valid": {"probe_true": {"Submission.lean":
                                                       payloads.submission(synthetic.VALID_TRUE)}}},
                             tools=tools)
    except SetupError as exc:  # refused before anything was scored: never accepted
        return ProbeCheck(name=label, ok=True,
                          evidence=f"valid proof with {broken}: refused ({exc})")
    pair = scored.get("valid/probe_true")
    evidence = synthetic.summary_line(pair) if pair else "no verdict"
    return ProbeCheck(name=label, ok=pair is not None and pair.verdict.verdict != "accepted",
                      evidence=f"valid proof with {broken}: {evidence}")
