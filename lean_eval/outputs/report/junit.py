"""A run as JUnit XML for CI test views. Built with ``xml.etree``, characters XML 1.0 forbids
replaced, so any standard parser reads it whatever a build printed."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from lean_eval.outputs.report.run_report import Run, run_report, visible, why_not_scored
from lean_eval.records import kinds
from lean_eval.records.run_report import PairReport
from lean_eval.records.verdict import INFRASTRUCTURE_FAILURES, PairRef

_XML_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: str) -> str:
    return _XML_ILLEGAL.sub("\ufffd", visible(text))


def _junit_case(suite: ET.Element, p: PairReport, tail: Sequence[str]) -> str | None:
    """One pair's testcase; the counter it adds to besides ``tests``, if any."""
    case = ET.SubElement(suite, "testcase", classname=_x(p.submission), name=_x(p.problem),
                         time=f"{p.wall_seconds or 0.0:.3f}")
    body = "\n".join((p.message, *tail))
    if kinds.category(p.verdict) == "fail":
        node = ET.SubElement(case, "failure", type=_x(p.reason), message=_x(p.message))
        node.text = _x(body)
        return "failures"
    if p.verdict == "error" or p.execution in INFRASTRUCTURE_FAILURES:
        node = ET.SubElement(case, "error", type=_x(f"{p.execution}/{p.reason}"),
                             message=_x(p.message))
        node.text = _x(body)
        return "errors"
    if kinds.category(p.verdict) == "skip":
        ET.SubElement(case, "skipped", message="unchanged: the starter was submitted")
        return "skipped"
    return None


def _junit_error(suite: ET.Element, classname: str, name: str, kind: str, message: str) -> str:
    case = ET.SubElement(suite, "testcase", classname=_x(classname), name=_x(name),
                         time="0.000")
    ET.SubElement(case, "error", type=kind, message=_x(message))
    return "errors"


def render_junit(run: Run) -> str:
    """A testsuite per submission, a testcase per problem: ``rejected`` and ``invalid_submission``
    fail, ``unchanged`` is skipped; ``error``, unscored pairs and missing shards are errors (a
    partial merge is red). A submission without pairs is one failing or skipped testcase."""
    doc = run_report(run)
    tails = {(p.submission.id, p.problem.id): p.log.tail for p in run.verdicts if p is not None}
    root = ET.Element("testsuites", name="lean-eval")
    by_sub: dict[str, list[PairReport]] = {s.id: [] for s in doc.submissions}
    for p in doc.pairs:
        by_sub.setdefault(p.submission, []).append(p)
    unscored: dict[str, list[PairRef]] = {}
    for ref in doc.not_scored:
        unscored.setdefault(ref.submission, []).append(ref)
        by_sub.setdefault(ref.submission, [])
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    rejections = {s.id: s.rejection for s in doc.submissions}
    hints = {s.id: s.hint for s in doc.submissions}
    suites: list[tuple[ET.Element, list[str | None], float]] = []
    for sid, pairs in by_sub.items():
        suite = ET.SubElement(root, "testsuite", name=_x(sid))
        added = [_junit_case(suite, p, tails.get((p.submission, p.problem), ())) for p in pairs]
        added += [_junit_error(suite, sid, r.problem, "not_scored",
                               why_not_scored(run.summary, r)) for r in unscored.get(sid, ())]
        if not pairs and not unscored.get(sid) and rejections.get(sid):
            case = ET.SubElement(suite, "testcase", classname=_x(sid), name="(submission)",
                                 time="0.000")
            ET.SubElement(case, "failure", type="rejected_submission",
                          message=_x(rejections[sid] or ""))
            added.append("failures")
        elif not pairs and not unscored.get(sid) and hints.get(sid):
            case = ET.SubElement(suite, "testcase", classname=_x(sid), name="(submission)",
                                 time="0.000")
            ET.SubElement(case, "skipped", message=_x(f"no problem directory found: "
                                                      f"{hints[sid]}"))
            added.append("skipped")
        suites.append((suite, added, sum(p.wall_seconds or 0.0 for p in pairs)))
    if doc.missing_shards:  # "(...)" is no submission id, so this suite is no submission's
        suite = ET.SubElement(root, "testsuite", name="(missing shards)")
        suites.append((suite, [_junit_error(suite, "(missing shards)", k, "missing_shard",
                                            f"shard {k} is missing: none of the merged outputs "
                                            "scored it") for k in doc.missing_shards], 0.0))
    if doc.disagreements:  # a summary line its verdict file contradicts: red, as the file says
        suite = ET.SubElement(root, "testsuite", name="(summary disagreements)")
        suites.append((suite, [_junit_error(suite, "(summary disagreements)", d.split(": ")[0],
                                            "summary_disagrees", d)
                               for d in doc.disagreements], 0.0))
    for suite, added, wall in suites:
        n = {"tests": len(added), **{k: added.count(k) for k in totals if k != "tests"}}
        for key, value in n.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{wall:.3f}")
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


