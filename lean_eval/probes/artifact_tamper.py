"""Probe ``artifact_tamper``: nothing started by a build outlives it to swap what is judged.

The payload starts a ``setsid``-detached heartbeat that, once the build is over, overwrites
every ``.olean``; Lake's sandbox must kill it when the build step ends, before the export.
"""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

from lean_eval.probes import payloads, registry, synthetic
from lean_eval.records.probe_result import ProbeCheck, ProbeResult

NAME = "artifact_tamper"
PROVES = ("a detached descendant of a submitted build dies with the build step: it cannot "
          "keep running into the export and kernel phases, tamper with the build outputs that "
          "are judged, or outlive the pair")
SID, PID = "tamper", "probe_true"
INTERVAL = 0.02  # seconds between heartbeats
DELAY = 0.25  # how long Solution.olean must exist before tampering starts (after the build)
SLACK = 0.005  # clock and rounding tolerance, seconds
SETTLE = 0.25  # between the post-run size checks of the heartbeat file

LOOP = r'''
import glob, json, os, sys, time
spec = json.loads(sys.argv[2])
seen = None
while True:
    now = time.time()
    with open(spec["heartbeat"], "a") as f:
        f.write("%.6f %s\n" % (now, spec["token"]))
    if os.path.exists(spec["solution_olean"]):
        seen = seen or now
        if now - seen >= spec["delay"]:
            for path in glob.glob(os.path.join(spec["lib"], "**", "*.olean"), recursive=True):
                try:
                    with open(path, "w") as f:
                        f.write(spec["mark"])
                    with open(spec["tamper_log"], "a") as f:
                        f.write("%.6f %s\n" % (now, path))
                except OSError:
                    pass
    time.sleep(spec["interval"])
'''


def _beats(path: Path) -> list[float]:
    if not path.is_file():
        return []
    words = [line.split()[:1] for line in path.read_text(errors="replace").splitlines()]
    return [float(w[0]) for w in words if w and w[0].replace(".", "", 1).isdigit()]


def _carriers(tok: str) -> list[str]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes()
            except OSError:
                continue
            if tok.encode() in cmdline:
                shown = cmdline.replace(b"\0", b" ")[:80].decode(errors="replace")
                found.append(f"{entry.name}: {shown}")
    return found


def _tampered(build: Path, mark: bytes) -> list[str]:
    if not build.is_dir():
        return []
    return sorted(str(p.relative_to(build)) for p in build.rglob("*")
                  if p.is_file() and not p.is_symlink() and mark in p.read_bytes())


def run(ctx: registry.ProbeContext) -> ProbeResult:
    tok = payloads.token()
    lay = synthetic.layout(ctx.scratch / "run")
    ws = lay.workspace(SID, PID)
    evdir = ws / ".lake" / "probe"
    heartbeat, tamper_log = evdir / "heartbeat", evdir / "tampered"
    mark = f"TAMPERED-{tok}\n"
    lib = ws / ".lake" / "build" / "lib" / "lean"
    spec = {"token": tok, "heartbeat": str(heartbeat), "tamper_log": str(tamper_log),
            "lib": str(lib), "solution_olean": str(lib / "Solution.olean"), "mark": mark,
            "interval": INTERVAL, "delay": DELAY}
    hb = shlex.quote(str(heartbeat))
    # Start the detached heartbeat, then hold the build until its first beat is on disk (at
    # most 10 s), so that the heartbeat is certainly alive while the build still runs.
    command = (f"/bin/mkdir -p {shlex.quote(str(evdir))} && /usr/bin/setsid "
               f"{payloads.python_command(LOOP, spec)} </dev/null >/dev/null 2>&1 & "
               f"i=0; while [ ! -s {hb} ] && [ $i -lt 500 ]; do /bin/sleep 0.02; i=$((i+1)); "
               "done")
    text = payloads.submission(synthetic.VALID_TRUE, payloads.io_payload(command))
    name = ctx.tools.toolchain.name
    catalog = synthetic.synthetic_catalog(ctx.scratch / "benchmark", [synthetic.probe_true(name)],
                                          name)
    scored = synthetic.score(ctx, lay, catalog, {SID: {PID: {"Submission.lean": text}}})
    pair = scored[f"{SID}/{PID}"]
    sizes = [heartbeat.stat().st_size if heartbeat.exists() else -1]
    for _ in range(2):
        time.sleep(SETTLE)
        sizes.append(heartbeat.stat().st_size if heartbeat.exists() else -1)
    beats = _beats(heartbeat)
    phases = pair.verdict.timings.phases
    after_build = sum(s for p, s in phases.items()
                      if p == "export_solution" or p.startswith("kernel:"))
    exported = "export_solution" in phases
    # Every later phase began after the Solution build had ended (its sandbox was gone), so
    # (verdict handed over) - (time spent from the Solution export on) is an upper bound on
    # when the build's sandbox ended. Without an export phase only the end of the run bounds it.
    boundary = pair.finished - (after_build if exported else 0.0)
    last = max(beats) if beats else None
    check = ProbeCheck
    checks = [
        check(name="scored_through_driver", ok=pair.verdict.verdict == "accepted",
              evidence=f"synthetic pair: {synthetic.summary_line(pair)}"),
        check(name="heartbeat_started", ok=bool(beats),
              evidence=f"{len(beats)} heartbeat(s) in {heartbeat}"
                       + ("" if beats else f" ({payloads.PY} and setsid must be visible)")),
    ]
    if last is not None:
        late = sum(1 for b in beats if b > boundary + SLACK)
        checks += [
            check(name="stopped_before_export", ok=exported and late == 0,
                  evidence=f"last heartbeat {pair.finished - last:.3f}s before the verdict; "
                           f"the Solution export began at least {after_build:.3f}s before it"
                           f"{'' if exported else ' (no export phase reached)'}; heartbeats "
                           f"after the build: {late} of {len(beats)}"),
            check(name="stopped_before_run_end", ok=last <= pair.finished + SLACK,
                  evidence=f"last heartbeat {pair.finished - last:.3f}s before the verdict"),
        ]
    checks += [
        check(name="no_growth_after_run", ok=len(set(sizes)) == 1,
              evidence=f"heartbeat file size {sizes} over {2 * SETTLE:.2f}s after the run"),
        check(name="no_survivor_process", ok=not (found := _carriers(tok)),
              evidence=f"processes carrying the marker: {found or 'none'}"),
        check(name="judged_outputs_untampered",
              ok=not (bad := _tampered(ws / ".lake" / "build", mark.encode()))
              and not tamper_log.exists(),
              evidence=f"build outputs with the tamper marker: {bad or 'none'}; tamper log: "
                       f"{tamper_log.read_text()[:200] if tamper_log.exists() else 'absent'}"),
    ]
    return registry.judge(NAME, PROVES, checks)
