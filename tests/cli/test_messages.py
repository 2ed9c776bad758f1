"""Messages a newcomer meets (issue 26, "Messages"): every problem in one message, each said
once, naming what was found and the option that applies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_runner import FakeRunEval, FakeRunner
from support import BATCH, REPO, correct, keypair, make_submission, shards_of, write_output

from lean_eval.cli import main
from lean_eval.cli.group import SECTIONS
from lean_eval.errors import UsageError
from lean_eval.scoring import arguments


def test_every_argument_problem_of_run_eval_is_in_one_message(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        arguments.check_run([tmp_path / "missing1", tmp_path / "missing2"], tmp_path / "o",
                            None, None, REPO)
    assert "missing1 does not exist" in str(caught.value)
    assert "missing2 does not exist" in str(caught.value)
    with pytest.raises(UsageError) as caught:
        arguments.check_run([tmp_path / "missing1"], tmp_path / "o", None, {"nope"}, REPO)
    assert "missing1 does not exist" in str(caught.value)
    assert "'nope'" in str(caught.value)
    sub = make_submission(tmp_path, "sub", {"two_plus_two": {"Submission.lean": "x"}})
    arguments.check_run([sub], tmp_path / "o", None, {"two_plus_two"}, REPO)  # all fine


def test_merge_of_a_run_made_without_shard_says_so(tmp_path: Path) -> None:
    parts = shards_of(tmp_path)
    plain = write_output(tmp_path / "plain", BATCH)
    result = CliRunner().invoke(main, ["merge", str(parts[0]), str(plain), "--out",
                                       str(tmp_path / "m")], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert f"{plain}: not a shard (that run was made without --shard K/N)" in result.stderr
    assert "options_digest" not in result.stderr
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("data", [b"\x1f\x8b\x08\x00garbage", b"\x01" * 4096, b""])
def test_a_corrupt_archive_has_its_own_code_and_no_layout_hint(tmp_path: Path,
                                                               data: bytes) -> None:
    (tmp_path / "bad.tgz").write_bytes(data)
    result = CliRunner().invoke(main, ["validate-submission", str(tmp_path / "bad.tgz"),
                                       "--benchmark", str(REPO), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["rejection_code"] == "archive_corrupt"
    assert report["rejection"].startswith("archive: corrupt ")
    assert report["hint"] is None
    text = CliRunner().invoke(main, ["validate-submission", str(tmp_path / "bad.tgz"),
                                     "--benchmark", str(REPO)], catch_exceptions=False)
    assert "(archive_corrupt)" in text.output and "no problem directory" not in text.output


@pytest.mark.parametrize("command", ["list-problems", "validate-submission"])
@pytest.mark.parametrize(("flag", "value", "wanted"), [
    ("--problem", "two_plus_tw", "'two_plus_tw' (did you mean two_plus_two?)"),
    ("--status", "activ", "--status 'activ' (did you mean active?) matches no problem: the "
                          "benchmark's are active"),
    ("--tag", "nope", "--tag 'nope' matches no problem: the benchmark's are arithmetic, "),
])
def test_an_unknown_selection_value_gets_close_matches_and_the_known_ones(
        command: str, flag: str, value: str, wanted: str) -> None:
    args = [command, *([str(REPO / "examples" / "submissions" / "correct")]
                       if command != "list-problems" else []),
            flag, value, "--benchmark", str(REPO)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert wanted in result.stderr, result.stderr


def test_verify_without_submission_says_nothing_about_submissions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_fake = FakeRunEval(FakeRunner(), tmp_path, monkeypatch)
    private, public = keypair(tmp_path)
    sub = make_submission(tmp_path / "in", "good", {"two_plus_two": {
        "Submission.lean": correct("two_plus_two")}})
    run = run_fake(sub, extra=("--sign-key", str(private)))
    assert run.code == 0, run.result.output
    plain = CliRunner().invoke(main, ["verify", str(run.out), "--key", str(public)],
                               catch_exceptions=False)
    assert plain.exit_code == 0, plain.output
    assert plain.stdout.startswith(f"verified {run.out}: ")
    assert "match" not in plain.stdout.replace(str(run.out), "")
    named = CliRunner().invoke(main, ["verify", str(run.out), "--key", str(public),
                                      "--submission", str(sub)], catch_exceptions=False)
    assert named.exit_code == 0 and "; 1 submission(s) match" in named.stdout


def test_every_commands_verbose_help_says_what_it_adds_there() -> None:
    """Each command's own -v text; only the commands that run probes mention them."""
    probing = {"run-eval", "probe", "replay", "probe-script"}
    for name, command in main.commands.items():
        text = " ".join(str(getattr(p, "help", "")) for p in command.params
                        if p.name == "verbose")
        assert "each command says" not in text, name
        assert ("probe" in text) == (name in probing), (name, text)


def test_help_lists_each_command_once_in_a_whole_sentence_grouped_by_who_uses_it() -> None:
    result = CliRunner().invoke(main, ["--help"], catch_exceptions=False)
    text = " ".join(result.output.split())
    listed = [name for _, rows in SECTIONS for name, _ in rows]
    visible = sorted(name for name, command in main.commands.items() if not command.hidden)
    assert sorted(listed) == visible and len(set(listed)) == len(listed)
    commands = result.output[result.output.index("Submitters:"):]
    assert "..." not in commands and "Other commands" not in commands
    assert text.index("Submitters:") < text.index("Maintainers:") < text.index("CI and results:")
    for _, rows in SECTIONS:
        for name, sentence in rows:
            assert sentence[0].isupper() and sentence.endswith("."), sentence
            assert f"{name} {sentence}" in text.replace("known- good", "known-good"), name


def test_report_refuses_a_missing_output_directory_and_takes_quiet(tmp_path: Path) -> None:
    out = write_output(tmp_path / "run", BATCH)
    target = tmp_path / "missing" / "dir" / "x.html"
    result = CliRunner().invoke(main, ["report", str(out), "--format", "html", "--output",
                                       str(target)], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert f"the directory {target.parent} does not exist" in result.stderr
    assert not (tmp_path / "missing").exists()
    quiet = CliRunner().invoke(main, ["report", str(out), "-q"], catch_exceptions=False)
    assert (quiet.exit_code, quiet.output) == (0, "")
    written = CliRunner().invoke(main, ["report", str(out), "-q", "--format", "csv",
                                        "--output", str(tmp_path / "r.csv")],
                                 catch_exceptions=False)
    assert (written.exit_code, written.output) == (0, "")
    assert (tmp_path / "r.csv").read_text().startswith("submission,")


def test_validate_submission_warns_of_a_changed_statement_and_a_trusted_import(
        tmp_path: Path) -> None:
    """Both are rejected by the comparator and both show without Lean; a correct submission
    gets no warning."""
    starter = (REPO / "workspaces" / "two_plus_two" / "Submission.lean").read_text()
    changed = starter.replace("2 + 2 = 4", "2 + 2 = 2 + 2").replace("sorry", "rfl")
    cyclic = "import Solution\n" + correct("two_plus_two")
    cases = {"changed": changed, "cyclic": cyclic, "fine": correct("two_plus_two")}
    found = {}
    for name, text in cases.items():
        sub = make_submission(tmp_path, name, {"two_plus_two": {"Submission.lean": text}})
        result = CliRunner().invoke(main, ["validate-submission", str(sub), "--benchmark",
                                           str(REPO), "--json"], catch_exceptions=False)
        (problem,) = json.loads(result.stdout)["problems"]
        assert problem["outcome"] == "scored", result.output
        found[name] = problem["warnings"]
        if name != "fine":  # on the console too, under "would be scored"
            text_run = CliRunner().invoke(main, ["validate-submission", str(sub),
                                                 "--benchmark", str(REPO)],
                                          catch_exceptions=False)
            assert "  warning: " in text_run.stderr
    assert found["fine"] == []
    (statement,) = found["changed"]
    assert ("Submission.two_plus_two's statement `: 2 + 2 = 2 + 2` differs from the starter's "
            "`: 2 + 2 = 4`") in statement and "(statement_mismatch)" in statement
    (imported,) = found["cyclic"]
    assert imported.startswith("Submission.lean imports Solution, the solution module")
