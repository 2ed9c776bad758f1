"""Probe ``tool_path``: tool lookups of Lake and the harness never run a planted program.

Programs named like ``TOOLS``, planted in a cache directory and by the build, and named every
way on the caller PATH, print a marker and append to a host file the sandbox cannot write; the
probe passes iff neither shows up and the pair is still accepted.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from lean_eval.probes import payloads, registry, synthetic
from lean_eval.records.probe_result import ProbeCheck, ProbeResult

NAME = "tool_path"
PROVES = ("PATH lookups made for a scoring run (by Lake and the harness) never execute a "
          "program planted in the work dir, a cache directory or the build's own output, "
          "however the PATH names it")
TOOLS = ("git", "env", "bwrap", "lake", "lean", "nanoda_bin", "leanchecker")
SID, PID = "toolpath", "probe_true"

PAYLOAD = r'''
import json, os, sys
spec = json.loads(sys.argv[2])
os.makedirs(spec["dir"], exist_ok=True)
for name, text in spec["files"].items():
    path = os.path.join(spec["dir"], name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
'''


def _planted(tool: str, tok: str, evidence: Path, real: str | None) -> str:
    tail = f'exec {real} "$@"' if real else "exit 127"
    return (f"#!/bin/sh\n# planted by the lean-eval tool_path probe\n"
            f"echo PLANTED-{tool}-RAN-{tok}\n"
            f"echo \"{tool} $0\" >> {evidence} 2>/dev/null\n{tail}\n")


def _real(ctx: registry.ProbeContext, tool: str) -> str | None:
    if tool == "bwrap":
        return str(ctx.tools.bwrap.path)
    inside = ctx.tools.toolchain.root / "bin" / tool
    if inside.is_file():
        return str(inside)
    return next((c for c in (f"/usr/bin/{tool}", f"/bin/{tool}") if os.path.isfile(c)), None)


def run(ctx: registry.ProbeContext) -> ProbeResult:
    tok = payloads.token()
    lay = synthetic.layout(ctx.scratch / "run")
    ws = lay.workspace(SID, PID)
    evidence_dir = ctx.scratch / "tool-evidence"
    evidence_dir.mkdir()
    evidence_dir.chmod(0o777)  # a planted program runs as the sandbox identity, and must say so
    evidence = evidence_dir / "ran.log"
    scripts = {t: _planted(t, tok, evidence, _real(ctx, t)) for t in TOOLS}
    cache = lay.work / "cache" / "bin"
    cache.mkdir(parents=True)
    for tool, text in scripts.items():
        (cache / tool).write_text(text)
        (cache / tool).chmod(0o755)
    cache_link = ctx.scratch / "innocent-bin"
    cache_link.symlink_to(cache, target_is_directory=True)
    build_bin = ws / ".lake" / "build" / "bin"
    build_link = ctx.scratch / "build-bin-link"
    build_link.symlink_to(build_bin, target_is_directory=True)
    planted_path = [str(cache), str(cache_link), os.path.relpath(cache, ws), str(build_bin),
                    ".lake/build/bin", str(build_link), ""]
    caller_path = ctx.caller_env.get("PATH") or "/usr/local/bin:/usr/bin:/bin"
    env = {**ctx.caller_env, "PATH": os.pathsep.join([*planted_path, caller_path])}
    payload = payloads.python_command(PAYLOAD, {"dir": str(build_bin), "files": scripts})
    text = payloads.submission(synthetic.VALID_TRUE, payloads.io_payload(payload))
    name = ctx.tools.toolchain.name
    catalog = synthetic.synthetic_catalog(ctx.scratch / "benchmark", [synthetic.probe_true(name)],
                                          name)
    pair = synthetic.score(ctx, lay, catalog, {SID: {PID: {"Submission.lean": text}}},
                       caller_env=env)[f"{SID}/{PID}"]
    lines = evidence.read_text(errors="replace").splitlines() if evidence.exists() else []
    ran = sorted({ln.split()[0] for ln in lines if ln.split()})
    in_log = sorted({t for t in TOOLS if f"PLANTED-{t}-RAN-{tok}" in pair.log})
    built = sorted(t for t in TOOLS if (build_bin / t).is_file())
    check = ProbeCheck
    checks = [
        check(name="scored_through_driver", ok=pair.verdict.verdict == "accepted",
              evidence=f"synthetic pair: {synthetic.summary_line(pair)}"),
        check(name="build_planted_its_tools", ok=built == sorted(TOOLS),
              evidence=f"planted by the build in {build_bin}: {built or 'nothing'}"),
        check(name="no_planted_program_ran", ok=not lines,
              evidence=f"host evidence file {evidence}: " + (
                  f"{len(lines)} run(s) of planted {ran}" if lines else "absent (nothing ran)")),
        check(name="no_planted_marker_in_log", ok=not in_log,
              evidence=f"PATH entries tried: {planted_path}; markers in the log: "
                       f"{in_log or 'none'}"),
    ]
    shutil.rmtree(cache, ignore_errors=True)
    return registry.judge(NAME, PROVES, checks)
