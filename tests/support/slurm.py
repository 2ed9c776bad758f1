"""A real one-node Slurm cluster for one test module: Debian's slurm-wlm and munge, brought up
with every file it needs (munge key, slurm.conf, state, spool, logs, sockets, pid files) in a
private directory and nothing of the system's configuration read or changed.

Each daemon runs in the foreground under :func:`lean_eval.supervise.process.run` in a thread of
the test process, so it is this process's descendant: it is stopped by its pid (SIGTERM, then
SIGKILL), and the reaper that run() puts between them kills whatever it left (slurmd's
slurmstepd and the jobs' processes) and kills the daemon itself if the test process dies.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

from lean_eval.supervise import process

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "scontrol", "scancel", "sinfo")
SEARCH = "/usr/sbin:/usr/bin:/sbin:/bin"
BACKSTOP = 1200.0  # seconds: no daemon outlives this even if the stop below never runs
ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
         "BOOT_FAIL", "DEADLINE")


class SlurmUnavailable(Exception):  # noqa: N818 - a reason to skip, not a failure of the code
    """Slurm cannot be installed or started here; the message says why."""


class Daemon(NamedTuple):
    name: str
    thread: threading.Thread
    outcome: list[process.ProcessResult]
    pid_file: Path


class Cluster(NamedTuple):
    """A running cluster: its directory, config, the node's size, and the clients' environment."""

    base: Path
    conf: Path
    node: str
    cpus: int
    memory_mb: int
    env: dict[str, str]  # SLURM_CONF for sbatch, scontrol, ... (merged into any caller's env)

    def client(self, *argv: str, timeout: float = 60) -> str:
        """Run a Slurm client command; its stdout, or AssertionError with its stderr."""
        done = process.run_capture((shutil.which(argv[0], path=SEARCH) or argv[0], *argv[1:]),
                                   env=self.env, cwd=self.base, timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {done.returncode}: "
                                 f"{done.stderr.decode(errors='replace')}")
        return done.stdout.decode(errors="replace")

    def job(self, job_id: str) -> list[dict[str, str]]:
        """``scontrol show job -o`` of ``job_id``: one dict per job (an array: one per task)."""
        text = self.client("scontrol", "show", "job", "-o", job_id)
        return [dict(word.split("=", 1) for word in line.split() if "=" in word)
                for line in text.splitlines() if line.strip()]

    def wait_ended(self, job_id: str, limit: float) -> list[dict[str, str]]:
        """The job's records once every task of it has ended (a generous ``limit``, not a
        measure: AssertionError with the job's state when it has not)."""
        deadline = time.monotonic() + limit
        while True:
            records = self.job(job_id)
            if records and all(r.get("JobState") in ENDED for r in records):
                return records
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} has not ended after {limit} s: {records}\n"
                                     f"{self.logs()}")
            time.sleep(0.5)

    def logs(self) -> str:
        """The daemons' logs' tails, for a failure message."""
        parts = []
        for name in ("slurmctld.log", "slurmd.log", "munged.log"):
            path = self.base / name
            if path.is_file():
                text = path.read_text(errors="replace").splitlines()[-30:]
                parts.append(f"--- {name}\n" + "\n".join(text))
        return "\n".join(parts)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise SlurmUnavailable("no MemTotal in /proc/meminfo")


def slurm_conf(base: Path, *, host: str, node: str, cpus: int, memory_mb: int,
               ports: tuple[int, int]) -> str:
    """The minimal configuration of a one-node cluster whose files all lie under ``base``."""
    return "\n".join([
        "ClusterName=lean-eval-test",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ports[0]}",
        f"SlurmdPort={ports[1]}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={base}/munge.socket",
        f"StateSaveLocation={base}/state",
        f"SlurmdSpoolDir={base}/spool",
        f"SlurmctldPidFile={base}/slurmctld.pid",
        f"SlurmdPidFile={base}/slurmd.pid",
        f"SlurmctldLogFile={base}/slurmctld.log",
        f"SlurmdLogFile={base}/slurmd.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",  # --mem is checked against the node, as in
        "JobAcctGatherType=jobacct_gather/none",  # production
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "ReturnToService=2",
        "MinJobAge=3600",  # ended jobs stay visible to scontrol for the test's lifetime
        "SchedulerParameters=sched_interval=2",
        f"NodeName={node} NodeAddr=127.0.0.1 NodeHostname={host} CPUs={cpus} "
        f"RealMemory={memory_mb} State=UNKNOWN",
        f"PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def missing_tools() -> list[str]:
    return [t for t in (*DAEMONS, *CLIENTS) if shutil.which(t, path=SEARCH) is None]


def _start(name: str, argv: tuple[str, ...], env: Mapping[str, str], base: Path) -> Daemon:
    outcome: list[process.ProcessResult] = []

    def target() -> None:
        outcome.append(process.run(argv, env=env, cwd=base, timeout=BACKSTOP, grace=5.0))

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return Daemon(name, thread, outcome, base / f"{name}.pid")


def _pid(daemon: Daemon) -> int | None:
    try:
        return int(daemon.pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _wait_for(what: str, ready: Callable[[], bool], daemons: list[Daemon], limit: float = 60
              ) -> None:
    deadline = time.monotonic() + limit
    while not ready():
        for d in daemons:
            if not d.thread.is_alive():
                out = d.outcome[0] if d.outcome else None
                raise SlurmUnavailable(f"{d.name} ended while waiting for {what}: "
                                       f"{out and (out.stderr or out.stdout)[-2000:]!r}")
        if time.monotonic() > deadline:
            raise SlurmUnavailable(f"{what} not ready after {limit} s")
        time.sleep(0.2)


def stop(daemons: list[Daemon]) -> list[str]:
    """Stop each daemon by its pid, last started first; what did not stop cleanly."""
    problems = []
    for d in reversed(daemons):
        pid = _pid(d)
        for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
            if not d.thread.is_alive():
                break
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            d.thread.join(wait)
        if d.thread.is_alive():
            problems.append(f"{d.name} (pid {pid}) still running")
    return problems


def leftovers(base: Path) -> list[str]:
    """Processes that name ``base`` in their argv or environment (a daemon, slurmstepd, a job):
    none may survive the cluster."""
    marker = str(base).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:  # ended meanwhile, or not ours to read
            continue
        if marker in argv or marker in environ:
            words = argv.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry.name}: {words}")
    return found


@contextlib.contextmanager
def one_node_cluster(parent: Path) -> Iterator[Cluster]:
    """A running cluster in a new directory under ``parent``; SlurmUnavailable says why not.
    Every daemon is stopped on the way out, also when the body fails."""
    if os.geteuid() != 0:
        raise SlurmUnavailable("a one-node Slurm needs root (munged, slurmd as root)")
    if missing := missing_tools():
        raise SlurmUnavailable(f"not installed: {', '.join(missing)} (apt-get install slurm-wlm "
                               "munge)")
    # a short path: munge's socket path must fit a sockaddr_un (108 bytes)
    base = Path(tempfile.mkdtemp(prefix="slurm-", dir=parent))
    base.chmod(0o755)  # munged wants its socket's directory searchable by all
    for sub in ("state", "spool"):
        (base / sub).mkdir(mode=0o700)
    key = base / "munge.key"
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_bytes(1024))
    finally:
        os.close(fd)
    host = socket.gethostname().split(".")[0]
    cpus = len(os.sched_getaffinity(0))
    memory_mb = _memory_mb() - 512  # below what slurmd measures, or the node is refused
    conf = base / "slurm.conf"
    conf.write_text(slurm_conf(base, host=host, node=host, cpus=cpus, memory_mb=memory_mb,
                               ports=(_free_port(), _free_port())), encoding="utf-8")
    env = {"PATH": SEARCH, "SLURM_CONF": str(conf), "LC_ALL": "C.UTF-8"}
    cluster = Cluster(base, conf, host, cpus, memory_mb, env)
    sbin = {name: shutil.which(name, path=SEARCH) or name for name in DAEMONS}
    daemons: list[Daemon] = []
    try:
        daemons.append(_start("munged", (
            sbin["munged"], "--foreground", f"--socket={base}/munge.socket",
            f"--key-file={key}", f"--pid-file={base}/munged.pid",
            f"--log-file={base}/munged.log", f"--seed-file={base}/munged.seed"), env, base))
        _wait_for("munged's socket", (base / "munge.socket").exists, daemons)
        daemons.append(_start("slurmctld", (sbin["slurmctld"], "-D", "-i", "-f", str(conf)),
                              env, base))
        _wait_for("slurmctld", lambda: (base / "slurmctld.pid").exists() and _answers(cluster),
                  daemons)
        daemons.append(_start("slurmd", (sbin["slurmd"], "-D", "-f", str(conf), "-N", host),
                              env, base))
        _wait_for("the node to be idle", lambda: _idle(cluster), daemons)
    except BaseException as exc:
        problems = stop(daemons)
        logs = cluster.logs()
        shutil.rmtree(base, ignore_errors=True)
        if isinstance(exc, SlurmUnavailable):
            raise SlurmUnavailable(f"{exc}; {'; '.join(problems)}\n{logs}") from exc
        raise
    try:
        yield cluster
    finally:
        problems = stop(daemons)
        deadline = time.monotonic() + 30  # the reapers kill what the daemons left, then end
        while (left := leftovers(base)) and time.monotonic() < deadline:
            time.sleep(0.2)
        problems += [f"left running: {p}" for p in left]
        logs = cluster.logs()
        shutil.rmtree(base, ignore_errors=True)
        if problems:
            raise AssertionError(f"daemons did not stop: {'; '.join(problems)}\n{logs}")


def _answers(cluster: Cluster) -> bool:
    try:
        cluster.client("scontrol", "ping", timeout=20)
    except AssertionError:
        return False
    return True


def _idle(cluster: Cluster) -> bool:
    try:
        state = cluster.client("sinfo", "-h", "-N", "-o", "%T", timeout=20).strip()
    except AssertionError:
        return False
    return state == "idle"
