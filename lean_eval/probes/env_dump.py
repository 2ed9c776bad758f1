"""Probe ``env_dump``: no secret of the caller's environment reaches a submitted build.

Decoys join the caller environment; the payload dumps every environment it can see (its own,
``env -0``'s, each visible process's). It passes iff no decoy shows up there or in the log,
every name is on ``ALLOWED`` and the payload's own environment holds ``REQUIRED``.
"""

from __future__ import annotations

import hashlib
import secrets
import shlex

from lean_eval.probes import payloads, registry, synthetic
from lean_eval.records.probe_result import ProbeCheck, ProbeResult

NAME = "env_dump"
PROVES = ("no variable of the caller's environment (tokens, keys, agent sockets, loader "
          "variables) is visible to a submitted build; it sees only the sandbox allowlist")
DECOY_NAMES = ("GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "SSH_AUTH_SOCK",
               "LD_PRELOAD", "LD_LIBRARY_PATH", "CI_JOB_TOKEN", "NPM_TOKEN", "PYPI_TOKEN",
               "ACTIONS_RUNTIME_TOKEN")
# What the sandbox sets (Lake's --setenv: PATH, HOME, LEAN_ABORT_ON_PANIC; LEAN_PATH for lean
# and export), what Lake may legitimately add for the processes it starts (LAKE, LAKE_HOME,
# LEAN_SYSROOT, LEAN_SRC_PATH, LEAN_GITHASH, LEAN_AR, LEAN_CC, LAKE_PKG_URL_MAP: the values of
# Lake's own `Env`, all derived from the toolchain and workspace), and what a shell adds to its
# own environment (PWD, OLDPWD, SHLVL, _). Nothing else, in particular no TMPDIR, LANG or
# COMPARATOR_BWRAP of Lake's own environment and no loader variable.
ALLOWED = frozenset({"PATH", "HOME", "LEAN_ABORT_ON_PANIC", "LEAN_PATH", "LEAN_SRC_PATH",
                     "LEAN_SYSROOT", "LEAN_GITHASH", "LEAN_AR", "LEAN_CC", "LAKE", "LAKE_HOME",
                     "LAKE_PKG_URL_MAP", "PWD", "OLDPWD", "SHLVL", "_"})
REQUIRED = ("PATH", "HOME")
SID, PID = "envdump", "probe_true"

PAYLOAD = r'''
import hashlib, json, os, sys
spec = json.loads(sys.argv[2])
def env_of(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return [e.decode("utf-8", "replace") for e in raw.split(b"\0") if e]
ev = {"self": env_of("/proc/self/environ"), "env0": env_of(spec["env0"]), "procs": {}}
for pid in sorted(os.listdir("/proc")):
    if pid.isdigit() and pid != str(os.getpid()):
        found = env_of("/proc/%s/environ" % pid)
        if found is None:
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")[:80]
        except OSError:
            cmd = "?"
        # names and value digests only: another process's values are not ours to copy
        ev["procs"][pid] = {"cmdline": cmd, "names": [e.split("=", 1)[0] for e in found],
                            "digests": [hashlib.sha256(e.split("=", 1)[-1].encode()).hexdigest()
                                        for e in found]}
with open(spec["evidence"], "w") as f:
    json.dump(ev, f)
'''



def _names(entries: object) -> set[str]:
    if not isinstance(entries, list):
        return set()
    return {str(e).split("=", 1)[0] for e in entries}


def _views(ev: dict[str, object]) -> dict[str, tuple[set[str], set[str]]]:
    """Each environment the payload saw: (variable names, SHA-256 digests of values)."""
    views = {}
    for label in ("self", "env0"):
        entries = ev.get(label)
        values = {str(e).split("=", 1)[-1] for e in entries} if isinstance(entries, list) else set()
        views[label] = (_names(entries), {hashlib.sha256(v.encode()).hexdigest() for v in values})
    procs = ev.get("procs")
    for pid, info in (procs.items() if isinstance(procs, dict) else ()):
        if isinstance(info, dict):
            views[f"pid {pid} ({str(info.get('cmdline', '?'))[:50].strip()})"] = (
                {str(n) for n in info.get("names", ())},
                {str(d) for d in info.get("digests", ())})
    return views


def run(ctx: registry.ProbeContext) -> ProbeResult:
    decoys = {n: f"decoy-{n.lower().replace('_', '-')}-{secrets.token_hex(12)}"
              for n in DECOY_NAMES}
    lay = synthetic.layout(ctx.scratch / "run")
    ws = lay.workspace(SID, PID)
    evdir = ws / ".lake" / "probe"
    env0 = evdir / "env0"
    command = (f"/bin/mkdir -p {shlex.quote(str(evdir))} && "
               f"/usr/bin/env -0 > {shlex.quote(str(env0))}; "
               + payloads.python_command(PAYLOAD, {"evidence": str(evdir / "env.json"),
                                                "env0": str(env0)}))
    text = payloads.submission(synthetic.VALID_TRUE, payloads.io_payload(command))
    name = ctx.tools.toolchain.name
    catalog = synthetic.synthetic_catalog(ctx.scratch / "benchmark", [synthetic.probe_true(name)],
                                          name)
    pair = synthetic.score(ctx, lay, catalog, {SID: {PID: {"Submission.lean": text}}},
                       caller_env={**ctx.caller_env, **decoys})[f"{SID}/{PID}"]
    check = ProbeCheck
    checks = [check(name="scored_through_driver", ok=pair.verdict.verdict == "accepted",
                    evidence=f"synthetic pair: {synthetic.summary_line(pair)}")]
    ev = synthetic.read_evidence(evdir / "env.json")
    if ev is None or ev.get("self") is None:
        return registry.judge(NAME, PROVES, [*checks, check(
            name="payload_evidence", ok=False,
            evidence=f"the payload left no environment dump in {evdir} "
                     f"({payloads.PY} must be visible in the sandbox)")])
    views = _views(ev)
    raw = b"".join(p.read_bytes() for p in sorted(evdir.iterdir()) if p.is_file())
    digests = {n: hashlib.sha256(v.encode()).hexdigest() for n, v in decoys.items()}
    inside = sorted(n for n, v in decoys.items()
                    if v.encode() in raw or any(digests[n] in d for _, d in views.values()))
    # The log is Lake's output too: a decoy there (e.g. the loader complaining about the
    # LD_PRELOAD decoy) means the caller's environment reached Lake itself.
    logged = sorted(n for n, v in decoys.items() if v in pair.log)
    checks.append(check(name="no_decoy_value_visible", ok=not inside and not logged,
                        evidence=f"{len(decoys)} decoys ({', '.join(DECOY_NAMES)}); seen in "
                                 f"the sandbox's {len(views)} environment(s): "
                                 f"{inside or 'none'}; in the log: {logged or 'none'}"))
    extra = {label: sorted(names - ALLOWED) for label, (names, _) in views.items()}
    extra = {label: names for label, names in extra.items() if names}
    seen = sorted(set().union(*(names for names, _ in views.values())) & ALLOWED)
    union = sorted(set().union(*extra.values())) if extra else []
    where = ", ".join(list(extra)[:3]) + (f" and {len(extra) - 3} more" if len(extra) > 3 else "")
    checks.append(check(name="only_allowlisted_names", ok=not extra,
                        evidence=f"allowlisted names seen in {len(views)} environment(s): "
                                 f"{seen}; outside the allowlist: "
                                 + (f"{union[:16]}{' ...' if len(union) > 16 else ''} in {where}"
                                    if extra else "none")))
    own = views["self"][0]
    missing = [n for n in REQUIRED if n not in own]
    checks.append(check(name="required_names_present", ok=not missing,
                        evidence=f"payload environment {sorted(own)}; missing: "
                                 f"{missing or 'none'}"))
    return registry.judge(NAME, PROVES, checks)
