"""A replay's drift is said with the flags to pass, not the record's keys and raw bytes
(issue 32): ``--memory-limit 2G``, never ``option memory_limit '2147483648'``."""

from __future__ import annotations

import json

from lean_eval.cli import main
from lean_eval.records.replay import LIMIT_FLAGS, OPTION_FLAGS, VERDICT_SAYS, Drift


def _run(key: str, recorded: object, current: object) -> str:
    return Drift(pin=f"option {key}", subject="run", recorded=json.dumps(recorded),
                 current=json.dumps(current)).describe()


def test_a_run_option_is_named_by_its_flag_with_the_value_to_pass() -> None:
    assert _run("memory_limit", 2 << 30, 8 << 30) == (
        "--memory-limit of run: recorded 2G, now 8G; pass --memory-limit 2G to replay as "
        "recorded")
    assert _run("timeout", 100.0, 1800.0) == (
        "--timeout of run: recorded 100, now 1800; pass --timeout 100 to replay as recorded")
    assert _run("disk_limit", None, 4 << 30).startswith(
        "--disk-limit of run: recorded 0, now 4G; pass --disk-limit 0")
    assert _run("max_written_file_bytes", 3 * (1 << 20) + 1, 1 << 30).startswith(
        "--max-written-file-bytes of run: recorded 3145729, now 1G")
    assert _run("skip_probes", True, False) == (
        "--skip-probes of run: the record skipped the probes, this replay runs them; pass "
        "--skip-probes to replay as recorded")
    assert _run("skip_probes", False, True).endswith("leave --skip-probes out to replay as "
                                                     "recorded")


def test_intake_limits_are_named_one_by_one() -> None:
    was = {"max_file_bytes": 512 << 10, "max_files": 10000, "intake_seconds": 30.0,
           "max_pax_keys": 64}
    now = {"max_file_bytes": 1 << 20, "max_files": 10000, "intake_seconds": 60.0,
           "max_pax_keys": 128}
    text = _run("limits", was, now)
    assert text == (
        "--intake-timeout of run: recorded 30, now 60; --max-file-bytes of run: recorded 512K, "
        "now 1M; max_pax_keys of run: recorded 64, now 128 (no flag sets it: a built-in limit "
        "of another lean-eval); pass --intake-timeout 30 --max-file-bytes 512K to replay as "
        "recorded")
    assert "option limits" not in text


def test_a_verdict_that_disagrees_with_its_record_offers_no_flag() -> None:
    drift = Drift(pin="limit memory_limit", subject="a/p", recorded=str(1 << 40),
                  current=f"{VERDICT_SAYS}{8 << 30}")
    assert drift.describe() == ("--memory-limit of a/p: recorded 1024G, the verdict says 8G (the "
                                "recorded verdict disagrees with the record's options)")
    other = Drift(pin="benchmark_commit", subject="run", recorded="ab", current="cd")
    assert other.describe() == "benchmark_commit of run: recorded 'ab', now 'cd'"


def test_every_flag_named_is_an_option_of_replay() -> None:
    replay = {opt for p in main.commands["replay"].params for opt in p.opts}
    assert set(OPTION_FLAGS.values()) | set(LIMIT_FLAGS.values()) <= replay
