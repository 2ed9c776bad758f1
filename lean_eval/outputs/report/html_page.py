"""A run as one self-contained HTML page: the matrix coloured by verdict, a filter, each pair.

Invariants:
- Nothing is loaded, and the Content-Security-Policy (``CSP``: our inline style and script by
  SHA-256 only) forbids every fetch and any other script, should a string ever slip through.
- Every string a submission or a build controls goes through ``h``, attributes included:
  ``<img src=x onerror=...>`` is text, never an element.
- Without the script the page still shows everything, and no filter box that cannot work; the
  script shows the box, filters (hiding a section's heading with the last item under it) and
  opens.
- Links go only to the run's own verdict and log files, relative to where the page is written.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import urllib.parse
from pathlib import Path, PurePosixPath

from lean_eval.outputs.report.markdown import FAILING, matrix_cells, matrix_problems
from lean_eval.outputs.report.run_report import (
    Run,
    out_of,
    printable,
    run_report,
    unscored_count,
    why_not_scored,
)
from lean_eval.outputs.report.run_report import detail as _detail
from lean_eval.records.run_report import PairReport, SubmissionReport
from lean_eval.records.verdict import TALLY

# Plain symbols most text fonts have (markdown's emoji need an emoji font); colour says the rest
SYMBOLS = {"solved": "\u2713", "rejected": "\u2717", "invalid": "\u2298", "unchanged": "=",
           "error": "\u26a0", "not scored": "?", "not submitted": "\u00b7"}

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1f2328; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid #d0d7de; padding: 2px 8px; }
thead th { background: #f6f8fa; }
tbody th { text-align: left; font-weight: normal; }
td.cell { text-align: center; min-width: 2em; }
td.cell a { color: inherit; text-decoration: none; display: block; }
.v-solved { background: #dafbe1; } .v-rejected { background: #ffd7d5; }
.v-invalid { background: #f5d0fe; } .v-unchanged { background: #eaeef2; }
.v-error { background: #fff1b8; } .v-not-scored { background: #ffe4b5; }
.v-none { color: #8c959f; } .dim { opacity: .25; }
.controls { margin: 1em 0; } .controls input { width: 24em; }
details.pair { border-left: 6px solid #d0d7de; margin: 2px 0; padding: 2px 8px; }
details.pair.v-solved { border-color: #1a7f37; } details.pair.v-rejected { border-color: #cf222e; }
details.pair.v-invalid { border-color: #8250df; } details.pair.v-error { border-color: #bf8700; }
details.pair.v-not-scored { border-color: #fb8f44; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 1em; }
dt { color: #57606a; } dd { margin: 0; } pre { margin: 0; white-space: pre-wrap; }
"""

SCRIPT = """
(function () {
  "use strict";
  var filter = document.getElementById("filter");
  var kind = document.getElementById("kind");
  var shown = document.getElementById("shown");
  var pairs = Array.prototype.slice.call(document.querySelectorAll("#pairs .pair"));
  var rows = Array.prototype.slice.call(document.querySelectorAll("#matrix tbody tr"));
  var items = Array.prototype.slice.call(document.querySelectorAll("#without-pairs li"));
  var sections = Array.prototype.slice.call(document.querySelectorAll("section[data-filtered]"));
  document.getElementById("controls").hidden = false;
  function matches(el, words, k) {
    if (k && el.getAttribute("data-kind") !== k) { return false; }
    var text = el.getAttribute("data-search") || "";
    return words.every(function (w) { return text.indexOf(w) !== -1; });
  }
  function apply() {
    var words = filter.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var k = kind.value;
    var n = 0;
    pairs.forEach(function (p) {
      var ok = matches(p, words, k);
      p.hidden = !ok;
      if (ok) { n += 1; }
    });
    rows.forEach(function (r) {
      var any = !k && matches(r, words, "");
      r.querySelectorAll("td[data-search]").forEach(function (c) {
        var ok = matches(c, words, k);
        c.classList.toggle("dim", !ok);
        any = any || ok;
      });
      r.hidden = !any;
    });
    items.forEach(function (li) { li.hidden = !matches(li, words, k); });
    sections.forEach(function (s) {
      s.hidden = !s.querySelector("[data-search]:not([hidden])");
    });
    shown.textContent = n + " of " + pairs.length + " pair(s) shown";
  }
  function open(id) {
    var d = document.getElementById(id);
    if (d && d.tagName === "DETAILS") { d.open = true; }
  }
  document.querySelectorAll("#matrix a").forEach(function (a) {
    a.addEventListener("click", function () { open(a.getAttribute("href").slice(1)); });
  });
  filter.addEventListener("input", apply);
  kind.addEventListener("change", apply);
  if (location.hash) { open(location.hash.slice(1)); }
  apply();
})();
"""


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


CSP = (f"default-src 'none'; style-src '{_sha256(CSS)}'; script-src '{_sha256(SCRIPT)}'; "
       "base-uri 'none'; form-action 'none'")


def h(text: str) -> str:
    """``text`` as HTML text or attribute value: printable, then entity-escaped."""
    return html.escape(printable(text), quote=True)


def _pre(text: str) -> str:
    """Multi-line ``text`` for ``<pre>``: lines kept, everything else as ``h`` does."""
    return "\n".join(h(line) for line in text.split("\n"))


def _kind(verdict: str) -> str:
    return TALLY.get(verdict, "not-scored")


def _link(path: str | None, out_dir: Path, page_dir: Path | None) -> str:
    """A link to ``path``, a file of the output directory named relative to it; other paths
    (a log a verdict recorded elsewhere) stay text."""
    if not path:
        return "(none)"
    relative = PurePosixPath(path)
    if page_dir is None or relative.is_absolute() or ".." in relative.parts:
        return h(path)
    target = os.path.relpath(out_dir.absolute() / relative, page_dir.absolute())
    return f'<a href="{h(urllib.parse.quote(target))}">{h(path)}</a>'


def _details(i: int, p: PairReport, tail: tuple[str, ...], out_dir: Path,
             page_dir: Path | None) -> str:
    kind = _kind(p.verdict)
    reason = _detail(p.verdict, p.reason, p.execution)
    # each label once: the tally kind only where it is another word, the reason only where it
    # says more than the verdict
    rows = [("verdict", h(p.verdict if kind == p.verdict else f"{p.verdict} ({kind})")),
            ("execution", h(p.execution)),
            *([("reason", h(p.reason))] if p.reason != p.verdict else []),
            ("message", f"<pre>{_pre(p.message)}</pre>"),
            ("time", h(f"{p.wall_seconds:.1f} s") if p.wall_seconds is not None else ""),
            ("verdict file", _link(p.verdict_path, out_dir, page_dir)),
            ("log", _link(p.log_path, out_dir, page_dir))]
    if tail:
        rows.append(("log tail", f"<pre>{_pre(chr(10).join(tail))}</pre>"))
    search = " ".join((p.submission, p.problem, p.verdict, kind, p.reason)).lower()
    body = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    return (f'<details id="pair-{i}" class="pair v-{kind}" data-kind="{kind}" '
            f'data-search="{h(search)}"><summary>{SYMBOLS.get(kind, "")} {h(p.submission)} / '
            f"{h(p.problem)}: {h(p.verdict)}{h(f' ({reason})') if reason else ''}</summary>"
            f"<dl>{body}</dl></details>")


def _unscored_details(i: int, sub: str, prob: str, why: str) -> str:
    search = f"{sub} {prob} not scored".lower()
    return (f'<details id="pair-{i}" class="pair v-not-scored" data-kind="not-scored" '
            f'data-search="{h(search)}"><summary>{SYMBOLS["not scored"]} {h(sub)} / {h(prob)}: '
            f"not scored</summary><dl><dt>why</dt><dd>{h(why)}</dd></dl></details>")


def _whole_row(sub: SubmissionReport, width: int) -> str:
    """A submission that scored nothing: rejected as a whole, or no problem directory."""
    if sub.rejection:
        search = h(f"{sub.id} invalid rejected as a whole".lower())
        return (f'<td colspan="{width}" class="cell whole v-invalid" data-whole="rejected" '
                f'data-kind="invalid" data-search="{search}">{SYMBOLS["invalid"]} rejected as '
                f"a whole</td><td>rejected</td>")
    return (f'<td colspan="{width}" class="cell whole v-none" data-whole="empty">'
            f'{SYMBOLS["not submitted"]} no problem directory found</td><td>0/0</td>')


def _run_line(run: Run) -> str:
    """When the run was made, on which benchmark commit, with which toolchain."""
    ident = run.summary.identity
    commit = ident.benchmark_commit or "none (not a git checkout)"
    return (f'<p id="run">Run started {h(run.summary.started_at)}, finished '
            f"{h(run.summary.finished_at)}; benchmark {h(ident.benchmark_path)} at commit "
            f"{h(commit)}; toolchain {h(ident.toolchain_name)}; lean-eval "
            f"{h(ident.harness_version)}.</p>")


def render_html(run: Run, page_dir: Path | None = None) -> str:
    """The page; every pair (failures first) as ``<details>``. ``page_dir``: where the page
    will be, so it links the verdict and log files (None: no links)."""
    doc = run_report(run)
    tails = {(v.submission.id, v.problem.id): v.log.tail for v in run.verdicts if v is not None}
    problems = matrix_problems(run, doc)
    kinds = matrix_cells(doc)
    order = sorted(range(len(doc.pairs)), key=lambda i: doc.pairs[i].verdict not in FAILING)
    anchors = {(doc.pairs[i].submission, doc.pairs[i].problem): n for n, i in enumerate(order)}
    anchors.update({(r.submission, r.problem): len(order) + n
                    for n, r in enumerate(doc.not_scored)})
    blocks = [_details(n, doc.pairs[i], tails.get((doc.pairs[i].submission,
                                                   doc.pairs[i].problem), ()),
                       run.out_dir, page_dir)
              for n, i in enumerate(order)]
    blocks += [_unscored_details(len(order) + n, r.submission, r.problem,
                                 why_not_scored(run.summary, r))
               for n, r in enumerate(doc.not_scored)]
    head = "".join(f"<th>{h(p)}</th>" for p in problems)
    body = []
    total = out_of(doc)
    for s in doc.submissions:
        if not s.pairs and not any((s.id, p) in kinds for p in problems):
            body.append(f'<tr data-search="{h(s.id.lower())}"><th scope="row">{h(s.id)}</th>'
                        f"{_whole_row(s, max(1, len(problems)))}</tr>")
            continue
        cells = []
        for p in problems:
            kind = kinds.get((s.id, p))
            if kind is None:
                cells.append(f'<td class="cell v-none">{SYMBOLS["not submitted"]}</td>')
                continue
            css = kind.replace(" ", "-")
            search = h(f"{s.id} {p} {kind}".lower())
            cells.append(f'<td class="cell v-{css}" data-kind="{css}" data-search="{search}">'
                         f'<a href="#pair-{anchors[(s.id, p)]}" title="{h(f"{s.id} / {p}")}: '
                         f'{h(kind)}">{SYMBOLS[kind]}</a></td>')
        body.append(f'<tr data-search="{h(s.id.lower())}"><th scope="row">{h(s.id)}</th>'
                    f"{''.join(cells)}<td>{s.solved}/{total[s.id]}</td></tr>")
    counts = ", ".join(f"{n} {name}" for name, n in doc.counts.items() if n) or "no pairs"
    unscored = unscored_count(run.summary, doc.not_scored)
    legend = ", ".join(f"{sym} {name}" for name, sym in SYMBOLS.items())
    # data-kind: both count as invalid for --fail-on, so the verdict filter shows them there
    without = [f'<li data-kind="invalid" data-search="{h(f"{s.id} invalid rejected".lower())}">'
               f"{h(s.id)}: rejected as a whole: {h(s.rejection)}</li>"
               for s in doc.submissions if s.rejection and not s.pairs]
    without += [f'<li data-kind="invalid" data-search="{h(f"{s.id} invalid".lower())}">'
                f"{h(s.id)}: no problem directory found: {h(s.hint)}</li>"
                for s in doc.submissions if not s.rejection and not s.pairs and s.hint]
    missing = [f"<li>shard {h(k)} is missing: none of the merged outputs scored it</li>"
               for k in doc.missing_shards]
    options = "".join(f'<option value="{k}">{k}</option>'
                      for k in (*TALLY.values(), "not-scored"))
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>lean-eval results</title><style>{CSS}</style></head><body>",
        "<h1>lean-eval results</h1>", _run_line(run),
        (f'<p id="totals">{len(doc.pairs)} pair(s): {h(counts)}'
        f"{h('; ' + unscored) if unscored else ''}; exit code {doc.exit_code}.</p>"),
        f'<ul id="missing-shards">{"".join(missing)}</ul>' if missing else "",
        (f'<h2>summary.json disagrees with the verdict files (shown as the files say)</h2>'
         f'<ul id="disagreements">{"".join(f"<li>{h(d)}</li>" for d in doc.disagreements)}'
         "</ul>") if doc.disagreements else "",
        # hidden until the script, which alone makes it work, shows it
        ('<div class="controls" id="controls" hidden><label>Filter <input id="filter" '
        'type="search" placeholder="submission, problem, verdict or reason" '
        'autocomplete="off"></label> <select id="kind" aria-label="verdict"><option value="">'
        f'every verdict</option>{options}</select> <span id="shown"></span></div>'),
        (f'<table id="matrix"><thead><tr><th>submission</th>{head}<th>solved</th></tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"),
        f'<p class="legend">{legend}</p>',
        # each heading in a section the filter hides when nothing in it is shown
        ('<section data-filtered><h2>Submissions without a scored pair</h2><ul '
         f'id="without-pairs">{"".join(without)}</ul></section>') if without else "",
        (f'<section data-filtered><h2>Pairs</h2><div id="pairs">{"".join(blocks)}</div>'
         "</section>") if blocks else "",
        f"<script>{SCRIPT}</script></body></html>"]
    return "\n".join(part for part in parts if part) + "\n"
