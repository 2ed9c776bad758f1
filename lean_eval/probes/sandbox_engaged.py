"""Probe ``sandbox_engaged``: the Solution build really runs inside Lake's bubblewrap sandbox.

The payload tries each escape ``PROVES`` names (a user namespace in a forked child, so its own
namespaces stay as they are) and records errno names in an evidence file, which the probe
compares with host-side state.
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

from lean_eval.files.paths import resolved_inside
from lean_eval.probes import payloads, registry, secrets, synthetic
from lean_eval.records.probe_result import ProbeCheck, ProbeResult
from lean_eval.sandbox.masks import LAKE_MASKED_ROOTS

NAME = "sandbox_engaged"
PROVES = ("a submitted build cannot write host files, the project source or through a link out "
          "of .lake, cannot see host home/temp or other inputs and outputs, has no network "
          "route, cannot reach a host loopback listener, cannot create a user namespace, holds no "
          "capability and cannot mount a tmpfs in a new mount namespace, runs in its own "
          "namespaces, cannot read the run's signing key and, under a root harness, cannot read "
          "a secret of the harness's user outside Lake's masks")
# EACCES: a root harness's build runs as the sandbox identity, which owns none of those files.
DENIED = frozenset({"EROFS", "ENOENT", "EACCES"})
NAMESPACES = ("user", "pid", "net", "ipc", "uts", "mnt")
SID, PID = "sandbox", "probe_true"

PAYLOAD = r'''
import errno, json, os, socket, sys
spec = json.loads(sys.argv[2])
def attempt(path):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, spec["token"].encode())
        finally:
            os.close(fd)
        return "written"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def seen(path):
    try:
        with open(path, "rb") as f:
            return "read:" + ("token" if spec["token"].encode() in f.read() else "other")
    except OSError as e:
        if os.path.lexists(path):
            return "exists:" + errno.errorcode.get(e.errno, "?")
        return errno.errorcode.get(e.errno, str(e.errno))
def ifaces(path, column):
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []  # no such table (e.g. IPv6 disabled): no route of that family
    except OSError as e:
        return ["unreadable:" + errno.errorcode.get(e.errno, "?")]
    rows = [ln.split() for ln in lines[1 if column == 0 else 0:] if ln.strip()]
    return sorted({r[column] for r in rows if r})
ev = {"writes": {}, "link": None}
for key, path in spec["writes"].items():
    ev["writes"][key] = attempt(path)
home = os.environ.get("HOME")
ev["writes"]["sandbox_home"] = (attempt(os.path.join(home, "probe-" + spec["token"]))
                                if home else "no HOME")
ev["sandbox_home"] = home
try:
    os.makedirs(os.path.dirname(spec["link"]), exist_ok=True)
    os.symlink(spec["host_dir"], spec["link"])
    ev["link"] = "created"
except OSError as e:
    ev["link"] = errno.errorcode.get(e.errno, str(e.errno))
ev["writes"]["through_symlink"] = attempt(os.path.join(spec["link"],
                                                     "through-link-" + spec["token"]))
ev["writes"]["inside_lake"] = attempt(spec["inside"])
ev["hidden"] = {p: seen(p) for p in spec["hidden"]}
ev["routes4"] = ifaces("/proc/net/route", 0)
ev["routes6"] = ifaces("/proc/net/ipv6_route", -1)
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(3)
try:
    s.connect(("127.0.0.1", spec["port"]))
    ev["tcp"] = "connected"
except socket.timeout:
    ev["tcp"] = "timeout"
except OSError as e:
    ev["tcp"] = errno.errorcode.get(e.errno, str(e.errno))
finally:
    s.close()
def new_userns():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    child = os.fork()
    if child == 0:
        code = 0 if libc.unshare(0x10000000) == 0 else ctypes.get_errno()  # CLONE_NEWUSER
        os._exit(min(code, 255))
    code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    return "created" if code == 0 else errno.errorcode.get(code, str(code))
ev["userns"] = new_userns()
ev["caps"] = {}
with open("/proc/self/status") as f:
    for line in f:
        name, _, value = line.partition(":")
        if name in ("CapEff", "CapPrm", "CapBnd"):
            ev["caps"][name] = value.strip()
def new_mount_ns():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(r)
        if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS, without a new user namespace
            said = "unshare:" + errno.errorcode.get(ctypes.get_errno(), "?")
        elif libc.mount(b"none", spec["mount_at"].encode(), b"tmpfs", 0, None) != 0:
            said = "mount:" + errno.errorcode.get(ctypes.get_errno(), "?")
        else:
            said = "mounted"
        os.write(w, said.encode())
        os._exit(0)
    os.close(w)
    said = os.read(r, 200).decode()
    os.close(r)
    os.waitpid(child, 0)
    return said or "no answer"
ev["mountns"] = new_mount_ns()
ev["ns"] = {}
for n in spec["ns"]:
    try:
        ev["ns"][n] = os.readlink("/proc/self/ns/" + n)
    except OSError as e:
        ev["ns"][n] = "unreadable:" + errno.errorcode.get(e.errno, "?")
''' + secrets.PAYLOAD + r'''
with open(spec["evidence"], "w") as f:
    json.dump(ev, f)
'''


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def _masked(path: Path) -> str | None:
    real = os.path.realpath(path)
    return next((r for r in LAKE_MASKED_ROOTS if resolved_inside(real, r)), None)


def _writable_dir(value: str | None) -> Path | None:
    if not value or not os.path.isabs(value) or not os.path.isdir(value):
        return None
    return Path(value) if os.access(value, os.W_OK | os.X_OK) else None


def run(ctx: registry.ProbeContext) -> ProbeResult:
    tok = payloads.token()
    lay = synthetic.layout(ctx.scratch / "run")
    ws = lay.workspace(SID, PID)
    evidence = ws / ".lake" / "probe" / "sandbox.json"
    marker_dir = ctx.scratch / "host-marker"
    marker_dir.mkdir()
    (marker_dir / "existing").write_text(f"{tok}\n")
    before = _snapshot(marker_dir)
    host_home = _writable_dir(ctx.caller_env.get("HOME"))
    host_tmp = Path(tempfile.gettempdir())
    hidden = {"--out directory": lay.out / f"hidden-{tok}",
              "submission input": lay.subs / SID / f"hidden-{tok}",
              "host temp dir": host_tmp / f"hidden-{tok}"}
    if host_home is not None:
        hidden["host HOME"] = host_home / f".hidden-{tok}"
    stray = [host_tmp / f"probe-{tok}", Path("/tmp") / f"probe-{tok}",  # noqa: S108
             Path("/tmp/home") / f"probe-{tok}"]  # noqa: S108 - the sandbox's own HOME path
    if host_home is not None:
        stray.append(host_home / f"probe-{tok}")
    stray = list(dict.fromkeys(stray))
    user = ctx.tools.sandbox_user
    planted = secrets.plant(tok, user)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        for path in hidden.values():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{tok}\n")
        writes = {"project_source": ws / "Challenge.lean", "project_new_file": ws / f"new-{tok}",
                  "host_dir": marker_dir / f"written-{tok}", "tmp": Path("/tmp") / f"probe-{tok}",  # noqa: S108
                  "host_tmp": host_tmp / f"probe-{tok}"}
        if host_home is not None:
            writes["host_home"] = host_home / f"probe-{tok}"
        spec = {"token": tok, "evidence": str(evidence), "host_dir": str(marker_dir),
                "writes": {k: str(v) for k, v in writes.items()},
                "link": str(ws / ".lake" / "probe" / "out"),
                "inside": str(ws / ".lake" / "probe" / f"inside-{tok}"),
                "hidden": [str(p) for p in hidden.values()],
                "port": listener.getsockname()[1], "ns": list(NAMESPACES),
                "mount_at": str(ws / ".lake" / "probe"),
                "secrets": secrets.paths(planted, ctx.secrets)}
        text = payloads.submission(synthetic.VALID_TRUE,
                                payloads.io_payload(payloads.python_command(PAYLOAD, spec)))
        catalog = synthetic.synthetic_catalog(ctx.scratch / "benchmark",
                                          [synthetic.probe_true(ctx.tools.toolchain.name)],
                                          ctx.tools.toolchain.name)
        scored = synthetic.score(ctx, lay, catalog, {SID: {PID: {"Submission.lean": text}}})
        pair = scored[f"{SID}/{PID}"]
        try:
            conn, peer = listener.accept()
            conn.close()
            accepted_conn = f"a connection from {peer[0]}:{peer[1]} reached the host listener"
        except BlockingIOError:
            accepted_conn = ""
        stray_found = [str(p) for p in stray if p.exists()]
        ev = synthetic.read_evidence(evidence)
        found = _checks(ev, pair, catalog.problems[PID].trusted, ws, marker_dir, before, tok,
                        hidden, stray_found, accepted_conn, ctx.scratch)
        if ev is not None:
            found += secrets.checks(ev, planted, ctx.secrets, user)
        return registry.judge(NAME, PROVES, found)
    finally:
        secrets.clear(planted)
        listener.close()
        for path in [*hidden.values(), *stray]:
            path.unlink(missing_ok=True)


def _host_ns() -> dict[str, str]:
    return {n: os.readlink(f"/proc/self/ns/{n}") for n in NAMESPACES}


def _checks(ev: dict[str, object] | None, pair: synthetic.Scored, trusted: dict[str, bytes],
            ws: Path, marker_dir: Path, before: dict[str, bytes], tok: str,
            hidden: dict[str, Path], stray_found: list[str], accepted_conn: str,
            scratch: Path) -> list[ProbeCheck]:
    check = ProbeCheck
    checks = [check(name="scored_through_driver", ok=pair.verdict.verdict == "accepted",
                    evidence=f"synthetic pair: {synthetic.summary_line(pair)}")]
    if ev is None:
        return [*checks, check(name="payload_evidence", ok=False,
                               evidence=f"the payload left no evidence file in {ws}/.lake/probe "
                                        f"({payloads.PY} must be visible in the sandbox)")]
    w = ev.get("writes")
    writes: dict[str, str] = w if isinstance(w, dict) else {}

    def denied(*keys: str) -> tuple[bool, str]:
        got = {k: writes.get(k, "missing") for k in keys}
        return all(v in DENIED for v in got.values()), ", ".join(f"{k}={v}" for k, v in got.items())

    project_same = all((ws / n).read_bytes() == data for n, data in trusted.items())
    ok, text = denied("project_source", "project_new_file")
    checks.append(check(name="project_source_read_only",
                        ok=ok and project_same and not (ws / f"new-{tok}").exists(),
                        evidence=f"{text}; trusted files byte-identical afterwards: "
                                 f"{project_same}"))
    after = _snapshot(marker_dir)
    ok, text = denied("host_dir")
    checks.append(check(name="host_files_read_only", ok=ok and after == before,
                        evidence=f"{text}; host marker dir unchanged: {after == before}"))
    ok, text = denied("through_symlink")
    checks.append(check(name="symlink_out_of_lake_denied", ok=ok and after == before,
                        evidence=f"link {ev.get('link')}; {text}"))
    home_tmp = ", ".join(f"{k}={writes.get(k, '-')}"
                         for k in ("sandbox_home", "host_home", "tmp", "host_tmp"))
    checks.append(check(name="home_and_tmp_writes_stay_in_sandbox", ok=not stray_found,
                        evidence=f"inside the sandbox: {home_tmp} (HOME={ev.get('sandbox_home')})"
                                 f"; reached the host: {stray_found or 'none'}"))
    inside = ws / ".lake" / "probe" / f"inside-{tok}"
    inside_ok = writes.get("inside_lake") == "written" and inside.is_file() \
        and inside.read_text() == tok
    checks.append(check(name="private_lake_writable", ok=inside_ok,
                        evidence=f"inside_lake={writes.get('inside_lake')}; on the host: "
                                 f"{inside.is_file()}"))
    h = ev.get("hidden")
    seen: dict[str, str] = h if isinstance(h, dict) else {}
    masked = _masked(scratch)
    where = (f"scratch {scratch} lies under {masked}, which Lake masks itself" if masked else
             f"scratch {scratch} is outside Lake's masks, so the wrapper's masks hide it")
    shown = {label: seen.get(str(path), "missing") for label, path in hidden.items()}
    checks.append(check(name="host_markers_invisible",
                        ok=bool(shown) and all(v == "ENOENT" for v in shown.values()),
                        evidence=", ".join(f"{k}: {v}" for k, v in shown.items()) + f"; {where}"))
    r4, r6 = ev.get("routes4"), ev.get("routes6")
    routes_ok = isinstance(r4, list) and isinstance(r6, list) \
        and set(r4) <= {"lo"} and set(r6) <= {"lo"}
    checks.append(check(name="no_network_route", ok=routes_ok,
                        evidence=f"IPv4 route interfaces {r4}, IPv6 {r6}"))
    tcp = ev.get("tcp")
    checks.append(check(name="host_loopback_unreachable",
                        ok=tcp not in ("connected", None) and not accepted_conn,
                        evidence=f"connect to the host's 127.0.0.1 listener: {tcp}; "
                                 f"{accepted_conn or 'the listener saw no connection'}"))
    userns = ev.get("userns")
    checks.append(check(name="no_new_user_namespace", ok=userns not in ("created", None),
                        evidence=f"unshare(CLONE_NEWUSER) in the build: {userns}"))
    checks += _capability_checks(ev)
    n = ev.get("ns")
    inner: dict[str, str] = n if isinstance(n, dict) else {}
    host = _host_ns()
    same = [k for k in NAMESPACES if inner.get(k, host[k]) == host[k]]
    checks.append(check(name="own_namespaces", ok=not same,
                        evidence="sandbox " + ", ".join(f"{k}={inner.get(k)}" for k in NAMESPACES)
                                 + f"; shared with the host: {same or 'none'}"))
    return checks



def _capability_checks(ev: dict[str, object]) -> list[ProbeCheck]:
    """Empty capability sets, and no tmpfs in a new mount namespace (wrapper.NO_CAPABILITIES)."""
    c = ev.get("caps")
    caps: dict[str, str] = c if isinstance(c, dict) else {}
    empty = {"CapEff", "CapPrm", "CapBnd"} <= set(caps) and all(
        v.strip("0") == "" for v in caps.values())
    mountns = ev.get("mountns")
    return [ProbeCheck(name="no_capabilities", ok=empty,
                       evidence="in the build: " + (", ".join(f"{k} {v}" for k, v in
                                                           sorted(caps.items())) or "no sets")),
            ProbeCheck(name="no_new_mount_namespace",
                       ok=isinstance(mountns, str) and mountns not in {"mounted", "no answer"},
                       evidence=f"unshare(CLONE_NEWNS) then mount tmpfs in the build: {mountns}")]
