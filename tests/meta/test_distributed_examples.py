"""examples/distributed: the GitHub Actions workflow passes the pin audit, builds bubblewrap once
for every shard, shards/merges as documented and merges only the shards that wrote an output;
the Slurm scripts pass shellcheck, hand each task its shard sized by what Slurm granted and merge
after any end of the array (afterany) whatever shards exist (the real-Slurm run is
tests/e2e/test_slurm.py); the Kubernetes manifests validate against the Kubernetes schema, give
bubblewrap the securityContext it needs, map JOB_COMPLETION_INDEX to a shard, merge whatever
shards exist, and kubernetes-run.sh ends on a Failed Job as well as a Complete one."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lean_eval.supervise import process

REPO = Path(__file__).resolve().parents[2]
HERE = REPO / "examples" / "distributed"
WORKFLOW = HERE / "github-actions.yml"
SCRIPTS = ("slurm-submit.sh", "slurm-score.sbatch", "slurm-merge.sbatch", "kubernetes-run.sh")
MANIFESTS = ("kubernetes-shards.yaml", "kubernetes-merge.yaml")
# The oldest release whose schema has every field the manifests use (hostUsers, procMount,
# appArmorProfile); the README names it.
KUBERNETES = "1.33.0"
ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}


def load(name: str) -> Any:
    return yaml.safe_load((HERE / name).read_text(encoding="utf-8"))


def test_workflow_passes_the_pin_audit() -> None:
    done = process.run_capture((sys.executable, str(REPO / "scripts" / "action_pin_audit.py"),
                                str(WORKFLOW)), env=ENV, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    assert b"OK" in done.stdout


def test_workflow_shards_then_merges_into_the_step_summary() -> None:
    flow = load("github-actions.yml")
    score, merge = flow["jobs"]["score"], flow["jobs"]["merge"]
    shards = score["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    assert score["strategy"]["fail-fast"] is False
    assert score["env"]["SHARD"] == "${{ matrix.shard }}/${{ strategy.job-total }}"
    runs = [s.get("run", "") for s in score["steps"]]
    assert any("lean-eval run-eval" in r and '--shard "$SHARD"' in r for r in runs)
    uploads = [s for s in score["steps"] if "upload-artifact" in s.get("uses", "")]
    assert uploads and "matrix.shard" in uploads[0]["with"]["name"]
    assert merge["needs"] == "score"
    assert score["needs"] == "bwrap"
    text = "\n".join(s.get("run", "") for s in merge["steps"])
    assert 'lean-eval merge "${outputs[@]}" --out results' in text
    assert 'lean-eval report results --format markdown >> "$GITHUB_STEP_SUMMARY"' in text
    assert any("download-artifact" in s.get("uses", "") for s in merge["steps"])


def test_workflow_builds_bubblewrap_once_and_every_shard_runs_that_binary() -> None:
    # merge refuses shards whose bubblewrap digests differ: a build per runner would pass only
    # while every runner image is identical
    jobs = load("github-actions.yml")["jobs"]
    builders = [name for name, job in jobs.items()
                if any("install_bwrap.sh" in s.get("run", "") and "--apparmor-only" not in
                       s.get("run", "") for s in job["steps"])]
    assert builders == ["bwrap"]
    assert "matrix" not in jobs["bwrap"].get("strategy", {})
    assert jobs["bwrap"]["outputs"]["sha256"] == "${{ steps.pack.outputs.sha256 }}"
    upload = [s for s in jobs["bwrap"]["steps"] if "upload-artifact" in s.get("uses", "")]
    assert upload[0]["with"]["name"] == "lean-eval-bwrap"
    score = jobs["score"]
    assert score["env"]["BWRAP_SHA256"] == "${{ needs.bwrap.outputs.sha256 }}"
    download = [s for s in score["steps"] if "download-artifact" in s.get("uses", "")]
    assert download[0]["with"]["name"] == "lean-eval-bwrap"
    install = "\n".join(s.get("run", "") for s in score["steps"])
    assert 'sha256sum --check --strict' in install and "$BWRAP_SHA256" in install
    assert score["env"]["LEAN_EVAL_BWRAP"] == "/opt/lean-eval-bwrap/bin/bwrap"
    # the shard installs the checked binary before it prepares or scores
    names = [s["name"] for s in score["steps"]]
    assert names.index("Install the bubblewrap binary the bwrap job built") < names.index(
        "Prepare the runner for scoring")


@pytest.mark.parametrize("name", MANIFESTS)
def test_kubernetes_manifests_validate_against_the_kubernetes_schema(name: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    # strict: an unknown or misspelt field (procMounts, hostUser) is an error, not ignored
    kubernetes_validate.validate(load(name), KUBERNETES, strict=True)


def test_kubernetes_schema_check_catches_a_misspelt_field() -> None:
    # negative control: the validation above is not vacuous
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    job = load("kubernetes-shards.yaml")
    context = job["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    context["procMounts"] = context.pop("procMount")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, KUBERNETES, strict=True)


def test_kubernetes_shard_pod_gives_bubblewrap_what_it_needs() -> None:
    # bubblewrap mounts a new /proc in its own PID namespace: a default pod masks /proc (the
    # kernel then refuses the mount) and its seccomp/AppArmor profiles refuse unshare and mount
    pod = load("kubernetes-shards.yaml")["spec"]["template"]["spec"]
    assert pod["hostUsers"] is False  # Kubernetes accepts Unmasked only in a user namespace
    context = pod["containers"][0]["securityContext"]
    assert context["procMount"] == "Unmasked"
    assert context["seccompProfile"]["type"] in {"Unconfined", "Localhost"}
    assert context["appArmorProfile"]["type"] in {"Unconfined", "Localhost"}
    # and nothing broader than that
    assert context.get("privileged", False) is False
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}


def _fake_kubectl(bin_dir: Path, log: Path, failed: set[str]) -> dict[str, str]:
    """A ``kubectl`` whose ``wait`` reports each Job in ``failed`` Failed, every other Complete;
    the wait for the condition a Job never reaches blocks, as the real one does."""
    bin_dir.mkdir()
    cases = "\n".join(f"  *job/{job}) state=failed ;;" for job in sorted(failed))
    (bin_dir / "kubectl").write_text(
        "#!/bin/sh\n"
        f'echo "kubectl $*" >> {log}\n'
        '[ "$1" = wait ] || exit 0\n'
        'state=complete\n'
        f'case "$*" in\n{cases}\nesac\n'
        'case "$*" in *"condition=$state"*) exit 0 ;; esac\n'
        "exec sleep 600\n", encoding="utf-8")
    (bin_dir / "kubectl").chmod(0o755)
    return {**ENV, "PATH": f"{bin_dir}:/usr/bin:/bin"}


@pytest.mark.parametrize(("failed", "expected"), [
    (set(), 0), ({"lean-eval-shards"}, 1), ({"lean-eval-merge"}, 1)])
def test_kubernetes_run_waits_for_complete_or_failed_then_merges(
        tmp_path: Path, failed: set[str], expected: int) -> None:
    log = tmp_path / "calls"
    env = _fake_kubectl(tmp_path / "bin", log, failed)
    done = process.run_capture(("bash", str(HERE / "kubernetes-run.sh"), "1h"), env=env,
                               cwd=tmp_path, timeout=120)
    assert done.returncode == expected, done.stderr.decode()
    calls = log.read_text().splitlines()
    applies = [c for c in calls if c.startswith("kubectl apply")]
    # the merge is applied after the shard Job ended, Failed or Complete
    assert [a.split("/")[-1] for a in applies] == ["kubernetes-shards.yaml",
                                                   "kubernetes-merge.yaml"]
    assert calls.index(applies[1]) > max(i for i, c in enumerate(calls)
                                         if "job/lean-eval-shards" in c)
    shards = "Failed" if "lean-eval-shards" in failed else "Complete"
    assert f"job/lean-eval-shards: {shards}".encode() in done.stdout
    # both Jobs deleted first: a re-run starts them afresh (an existing Job would not run)
    assert calls[0].startswith("kubectl delete job lean-eval-shards lean-eval-merge")


def _embedded_scripts() -> list[tuple[str, str]]:
    found = []
    for name in ("kubernetes-shards.yaml", "kubernetes-merge.yaml"):
        for container in load(name)["spec"]["template"]["spec"]["containers"]:
            assert container["command"] == ["/bin/sh", "-c"]
            found.append((name, container["args"][0]))
    return found


@pytest.fixture(scope="module")
def shellcheck() -> str:
    found = shutil.which("shellcheck")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("shellcheck is not installed; CI must install it")
        pytest.skip("SHELLCHECK TESTS SKIPPED: shellcheck is not installed")
    return found


def test_shell_scripts_pass_shellcheck(shellcheck: str, tmp_path: Path) -> None:
    for name in SCRIPTS:
        done = process.run_capture((shellcheck, "--severity=style", str(HERE / name)),
                                   env=ENV, cwd=HERE)
        assert done.returncode == 0, f"{name}:\n{done.stdout.decode()}"
    for name, script in _embedded_scripts():
        path = tmp_path / f"{name}.sh"
        path.write_text(script, encoding="utf-8")
        done = process.run_capture((shellcheck, "--shell=sh", "--severity=style", str(path)),
                                   env=ENV, cwd=tmp_path)
        assert done.returncode == 0, f"{name}:\n{done.stdout.decode()}"


def test_shellcheck_would_catch_a_broken_script(shellcheck: str, tmp_path: Path) -> None:
    # negative control: the check above is not vacuous
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/usr/bin/env bash\nlean-eval merge $outputs --out $1\n", encoding="utf-8")
    done = process.run_capture((shellcheck, str(bad)), env=ENV, cwd=tmp_path)
    assert done.returncode != 0


def _fake_tools(bin_dir: Path, log: Path, lean_eval_status: int = 0) -> dict[str, str]:
    """``sbatch`` and ``lean-eval`` stand-ins that record their argv, one line per call; the
    ``lean-eval merge`` one writes its ``--out`` with a summary.json, as the real one does."""
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(
        f'#!/bin/sh\necho "sbatch $*" >> {log}\necho "$((1000 + $(wc -l < {log})));cluster"\n',
        encoding="utf-8")
    (bin_dir / "lean-eval").write_text(
        f'#!/bin/sh\necho "lean-eval $*" >> {log}\n'
        'if [ "$1" = merge ]; then\n'
        '  while [ "$#" -gt 1 ]; do [ "$1" = --out ] && out=$2; shift; done\n'
        '  mkdir "$out" && echo "{}" > "$out/summary.json"\n'
        'fi\n'
        f'exit {lean_eval_status}\n', encoding="utf-8")
    for tool in ("sbatch", "lean-eval"):
        (bin_dir / tool).chmod(0o755)
    return {**ENV, "PATH": f"{bin_dir}:/usr/bin:/bin"}


def test_slurm_submit_makes_the_merge_depend_on_the_array(tmp_path: Path) -> None:
    log = tmp_path / "calls"
    env = _fake_tools(tmp_path / "bin", log)
    (tmp_path / "subs").mkdir()
    done = process.run_capture(("bash", str(HERE / "slurm-submit.sh"), "3",
                                str(tmp_path / "subs"), str(tmp_path / "res"),
                                "--partition=p"), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    array, merge = log.read_text().splitlines()
    assert "--array=0-2" in array and "--partition=p" in array
    assert array.split()[-3].endswith("slurm-score.sbatch")
    # afterany: the merge runs however a task ended (afterok would wait forever after a failed
    # or cancelled one; tests/e2e/test_slurm.py shows it on a real Slurm)
    assert "--dependency=afterany:1001" in merge  # the array job's id, cluster name dropped
    assert merge.split()[-3].endswith("slurm-merge.sbatch") and merge.endswith(" 3")
    assert b"merge: job 1002" in done.stdout


def test_slurm_submit_refuses_a_bad_shard_count(tmp_path: Path) -> None:
    env = _fake_tools(tmp_path / "bin", tmp_path / "calls")
    done = process.run_capture(("bash", str(HERE / "slurm-submit.sh"), "0", str(tmp_path),
                                str(tmp_path / "r")), env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert not (tmp_path / "calls").exists()


@pytest.mark.parametrize("status", [0, 1, 2, 143])
def test_slurm_task_scores_its_shard_sized_by_what_slurm_granted(tmp_path: Path,
                                                                 status: int) -> None:
    log = tmp_path / "calls"
    env = _fake_tools(tmp_path / "bin", log, status)
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    env |= {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3",
            "SLURM_CPUS_PER_TASK": "4", "SLURM_MEM_PER_NODE": "33792"}
    done = process.run_capture(("bash", str(HERE / "slurm-score.sbatch"), str(tmp_path / "subs"),
                                str(tmp_path / "res")), env=env, cwd=tmp_path)
    assert done.returncode == status  # the merge runs whatever it is (afterany)
    call = log.read_text()
    # 33G less 1G for lean-eval, split between 4 pairs
    assert (f"{tmp_path}/subs/alice --out {tmp_path}/res/shard-1 --shard 2/3 --jobs 4 "
            "--memory-limit 8192M") in call


@pytest.mark.parametrize(("granted", "message"), [
    ({"SLURM_MEM_PER_CPU": "1536"}, None),  # --mem-per-cpu: 2 x 1536M, less 1G, per pair
    ({"SLURM_MEM_PER_NODE": "1200"}, "leaves 88M per pair"),
    ({}, "neither SLURM_MEM_PER_NODE nor SLURM_MEM_PER_CPU")])
def test_slurm_task_memory_per_pair_or_a_clear_refusal(
        tmp_path: Path, granted: dict[str, str], message: str | None) -> None:
    log = tmp_path / "calls"
    env = _fake_tools(tmp_path / "bin", log)
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    env |= {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "1",
            "SLURM_CPUS_PER_TASK": "2", **granted}
    done = process.run_capture(("bash", str(HERE / "slurm-score.sbatch"), str(tmp_path / "subs"),
                                str(tmp_path / "res")), env=env, cwd=tmp_path)
    if message is None:
        assert done.returncode == 0, done.stderr.decode()
        assert "--jobs 2 --memory-limit 1024M" in log.read_text()
    else:
        assert done.returncode == 2 and message in done.stderr.decode()
        assert not log.exists()  # nothing scored


def test_slurm_merge_merges_the_shards_that_wrote_an_output_then_reports(tmp_path: Path) -> None:
    log = tmp_path / "calls"
    env = _fake_tools(tmp_path / "bin", log) | {"SLURM_JOB_ID": "77"}
    res = tmp_path / "res"
    for i in (0, 2):  # task 1 was cancelled before it ran: no shard-1
        (res / f"shard-{i}").mkdir(parents=True)
        (res / f"shard-{i}" / "summary.json").write_text("{}")
    (res / "merged").mkdir()  # an earlier merge: replaced once the new one is written
    (res / "merged" / "old").write_text("")
    done = process.run_capture(("bash", str(HERE / "slurm-merge.sbatch"), str(res), "3"),
                               env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert b"shard-1 (array task 1) wrote no output" in done.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == f"lean-eval merge {res}/shard-0 {res}/shard-2 --out {res}/.merged-77"
    assert f"--format markdown --output {res}/report.md" in calls[1]
    assert f"--format junit --output {res}/junit.xml" in calls[2]
    assert sorted(p.name for p in res.iterdir()) == ["merged", "shard-0", "shard-2"]
    assert (res / "merged" / "summary.json").is_file() and not (res / "merged" / "old").exists()


def test_slurm_merge_with_no_shard_output_merges_nothing(tmp_path: Path) -> None:
    log = tmp_path / "calls"
    env = _fake_tools(tmp_path / "bin", log)
    done = process.run_capture(("bash", str(HERE / "slurm-merge.sbatch"), str(tmp_path), "2"),
                               env=env, cwd=tmp_path)
    assert done.returncode == 2 and b"no shard wrote an output" in done.stderr
    assert not log.exists()


def _merge_step(tmp_path: Path, log: Path) -> Path:
    """shards/lean-eval-shard-{1,3} with an output, -2 with verdicts only (its run failed)."""
    for k in (1, 2, 3):
        (tmp_path / "shards" / f"lean-eval-shard-{k}" / "alice").mkdir(parents=True)
        if k != 2:
            (tmp_path / "shards" / f"lean-eval-shard-{k}" / "summary.json").write_text("{}")
    return log


def test_workflow_merges_the_shards_that_wrote_an_output(tmp_path: Path) -> None:
    # a shard whose run failed may upload verdicts without a summary.json: merge would refuse
    # it and with it the whole batch, so it is left out (and merge names it missing)
    log = _merge_step(tmp_path, tmp_path / "calls")
    env = _fake_tools(tmp_path / "bin", log)
    merge = load("github-actions.yml")["jobs"]["merge"]
    run = next(s["run"] for s in merge["steps"] if s.get("name") == "Merge the shards")
    done = process.run_capture(("bash", "-e", "-c", run), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert log.read_text().splitlines()[0] == ("lean-eval merge shards/lean-eval-shard-1 "
                                               "shards/lean-eval-shard-3 --out results")
    assert b"lean-eval-shard-2 holds no summary.json" in done.stdout
    upload = next(s for s in load("github-actions.yml")["jobs"]["score"]["steps"]
                  if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["overwrite"] is True  # a re-run of a failed shard replaces its upload


def test_kubernetes_merge_merges_the_shards_that_wrote_an_output(tmp_path: Path) -> None:
    log = tmp_path / "calls"
    env = _fake_tools(tmp_path / "bin", log) | {"SHARDS": "3"}
    res = tmp_path / "data" / "results"
    for i in (0, 2):  # index 1 failed before it scored: no shard-1
        (res / f"shard-{i}").mkdir(parents=True)
        (res / f"shard-{i}" / "summary.json").write_text("{}")
    (res / "merged").mkdir()  # a previous run's merge: replaced
    container = load("kubernetes-merge.yaml")["spec"]["template"]["spec"]["containers"][0]
    script = container["args"][0].replace("/data/", f"{tmp_path}/data/")
    done = process.run_capture(("/bin/sh", "-c", script), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert b"shard-1 (index 1) wrote no output" in done.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == f"lean-eval merge {res}/shard-0 {res}/shard-2 --out {res}/.merged-new"
    assert (res / "merged" / "summary.json").is_file()
    assert sorted(p.name for p in res.iterdir()) == ["merged", "shard-0", "shard-2"]


def test_kubernetes_indexed_job_maps_the_index_to_a_shard(tmp_path: Path) -> None:
    job = load("kubernetes-shards.yaml")
    assert job["kind"] == "Job" and job["spec"]["completionMode"] == "Indexed"
    container = job["spec"]["template"]["spec"]["containers"][0]
    shards = {e["name"]: e["value"] for e in container["env"]}["SHARDS"]
    assert int(shards) == job["spec"]["completions"]
    log = tmp_path / "calls"
    env = _fake_tools(tmp_path / "bin", log)
    script = container["args"][0].replace("/data/", f"{tmp_path}/data/")
    (tmp_path / "data" / "submissions" / "bob").mkdir(parents=True)
    env |= {"JOB_COMPLETION_INDEX": "3", "SHARDS": shards}
    done = process.run_capture(("/bin/sh", "-c", script), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert f"--out {tmp_path}/data/results/shard-3 --shard 4/4" in log.read_text()
    merge = load("kubernetes-merge.yaml")["spec"]["template"]["spec"]["containers"][0]
    assert {e["name"]: e["value"] for e in merge["env"]}["SHARDS"] == shards
