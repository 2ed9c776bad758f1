"""The stand-in's model of Lean elaboration (design §7); see tests/standin/README.md.

Standard library only: this runs inside the sandbox under /usr/bin/python3 -IS.
"""

from __future__ import annotations

import json
import os
import re

OLEAN_FORMAT = "standin-olean-1"
EXPORT_FORMAT = "standin-export-1"

# keyword -> kind of constant it declares. An instance is a theorem when its type is a Prop and a
# definition otherwise; the model has no types, so it records "instance" and the comparison
# takes the kind its check needs (see comparator.compare).
KINDS = {
    "theorem": "theorem",
    "lemma": "theorem",
    "def": "definition",
    "abbrev": "definition",
    "instance": "instance",
    "axiom": "axiom",
}
# declarations the model does not record (they end the previous one, like an anonymous instance)
UNMODELLED = ("structure", "class", "inductive", "opaque")

# Axioms the model knows without a declaration, and the proof terms that stand for them.
BUILTIN_AXIOMS = {
    "sorryAx": "(α : Sort u) (synthetic : Bool := false) : α",
    "Lean.ofReduceBool": "(a b : Bool) (h : Lean.reduceBool a = b) : a = b",
}
TACTIC_AXIOMS = {"sorry": "sorryAx", "admit": "sorryAx", "native_decide": "Lean.ofReduceBool"}

_MODIFIERS = r"(?:(?:private|protected|noncomputable|partial|unsafe|nonrec)\s+)*"
_ATTRS = r"(?:@\[(?:[^\[\]]|\[[^\[\]]*\])*\]\s*)*"
_IN_PREFIX = r"(?:(?:open\s+[^\n]*?|set_option\s+\S+\s+\S+)\s+in(?:\s+|$))*"
DECL_RE = re.compile(
    r"^\s*" + _IN_PREFIX + _ATTRS + _MODIFIERS
    + r"(theorem|lemma|def|abbrev|instance|axiom|structure|class|inductive|opaque)(?=\s|$)(.*)$"
)
_PRIORITY_RE = re.compile(r"^\s*\(\s*priority\s*:=[^)]*\)")
_NAME_RE = re.compile(r"^\s+([^\s:(\[{⦃⟨]+)")
SCOPE_RE = re.compile(r"^\s*(?:(?:noncomputable|public)\s+)*(namespace|section|end)(?=\s|$)\s*(\S*)")
# lines that end a declaration without starting one the model records
BOUNDARY_RE = re.compile(
    r"^\s*(?:(?:open|set_option|variable|universe|attribute|example|mutual)(?=\s|$)|#|"
    r"(?:@\[(?:[^\[\]]|\[[^\[\]]*\])*\]\s*)+$)"
)
IMPORT_RE = re.compile(r"^\s*import\s+(.*)$")
# `[@[..]] [local|scoped] notation|infix|infixl|infixr|prefix|postfix|macro ... => expansion`:
# a command, so it ends the previous declaration; a later body that uses one of its atoms
# refers to what its expansion refers to (Lean elaborates the expansion in place)
NOTATION_RE = re.compile(
    r"^\s*" + _ATTRS + r"((?:local|scoped)\s+)?"
    + r"(?:notation|infixl|infixr|infix|prefix|postfix|macro)(?=[\s:(]|$)(.*)$"
)

BUILD_ERROR_RE = re.compile(r"^\s*--\s*standin:\s*build-error\s*$")
KERNEL_REJECT_RE = re.compile(r"^\s*--\s*standin:\s*kernel-reject\s+(.*?)\s*$")
IO_RE = re.compile(r"^\s*--\s*standin-io:\s?(.*)$")

_OPEN = "([{⟨⦃"
_CLOSE = ")]}⟩⦄"
_STRING_RE = re.compile(r'"(?:\\.|[^"\\])*"')
_CHAR_RE = re.compile(r"'(?:\\.|[^\\'\n])'")
_IDENT_CHAR_RE = re.compile(r"[\w'!?.]")
_ALTERNATIVE_RE = re.compile(r"[ \t]*\|[^\n]*=>")
_IDENT_RE = re.compile(r"[^\W\d][\w'!?]*(?:\.[^\W\d][\w'!?]*)*")


class ElabError(Exception):
    """An error the model reports as a Lean elaboration error (the build fails)."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


def literal_end(text: str, i: int) -> int:
    """End of the string or character literal at `i` (`i` itself when there is none)."""
    if text[i] == '"':
        m = _STRING_RE.match(text, i)
        return m.end() if m else len(text)
    if text[i] == "'" and (i == 0 or not _IDENT_CHAR_RE.match(text[i - 1])):
        m = _CHAR_RE.match(text, i)
        if m:
            return m.end()
    return i


def strip_comments(text: str) -> str:
    """Blank out `--` and (nested) `/- -/` comments (a comment separates tokens, as in Lean),
    keeping newlines, string and character literals."""
    out: list[str] = []
    i, n, depth = 0, len(text), 0
    while i < n:
        c = text[i]
        if depth:
            if text.startswith("/-", i):
                depth, i = depth + 1, i + 2
                out.append("  ")
            elif text.startswith("-/", i):
                depth, i = depth - 1, i + 2
                out.append("  ")
            else:
                out.append("\n" if c == "\n" else " ")
                i += 1
        elif text.startswith("/-", i):
            # Lean consumes the character after `/-` before scanning the body (for `/--` and
            # `/-!` it is the doc marker), so `/-/- -/` is one comment, not two openings
            after = text[i + 2:i + 3]
            out.append("  " + ("\n" if after == "\n" else " " * len(after)))
            depth, i = 1, i + 3
        elif text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif (j := literal_end(text, i)) > i:
            out.append(text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def collapse(text: str) -> str:
    return " ".join(text.split())


def split_statement(text: str) -> tuple[str, str]:
    """Split at the end of the statement: the first `:=`, `where` or line-leading `| ... =>`
    outside brackets and literals: (statement, body). The body keeps a `where`/`|`, drops `:=`."""
    depth = 0
    i = 0
    while i < len(text):
        j = literal_end(text, i)
        if j > i:
            i = j
            continue
        c = text[i]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0:
            if text.startswith(":=", i):
                return text[:i], text[i + 2 :]
            before = text[i - 1] if i else " "
            if (text.startswith("where", i) and not _IDENT_CHAR_RE.match(before)
                    and not _IDENT_CHAR_RE.match(text[i + 5 : i + 6] or " ")):
                return text[:i], text[i:]
            if before == "\n" and _ALTERNATIVE_RE.match(text, i):
                return text[:i], text[i:]
        i += 1
    return text, ""


def identifiers(body: str) -> list[str]:
    """Identifier tokens of a body, string literals removed, first occurrence order."""
    seen: dict[str, None] = {}
    for tok in _IDENT_RE.findall(_STRING_RE.sub(" ", body)):
        seen.setdefault(tok, None)
    return list(seen)


def parse_imports(text: str) -> list[str]:
    mods: list[str] = []
    for line in strip_comments(text).splitlines():
        m = IMPORT_RE.match(line)
        if m:
            mods.extend(m.group(1).split())
    return mods


def parse_directives(text: str) -> dict:
    """The `-- standin` lines of a file, read from the raw text in file order."""
    build_error = False
    kernel_reject: list[str] = []
    io: list[str] = []
    for line in text.splitlines():
        if BUILD_ERROR_RE.match(line):
            build_error = True
        elif (m := KERNEL_REJECT_RE.match(line)) and m.group(1):
            kernel_reject.append(m.group(1))
        elif (m := IO_RE.match(line)) and m.group(1).strip():
            io.append(m.group(1))
    return {"build_error": build_error, "kernel_reject": kernel_reject, "io": io}


def parse_declarations(text: str) -> list[dict]:
    """Declarations of a file: [{name, kind, type, value, line}] in file order.

    A declaration starts at a line `[open .. in]* [@[..]]* [modifiers] <keyword> <name>` and
    runs to the next such line or a boundary line (`end`, `namespace`, `section`, `open`, ...:
    BOUNDARY_RE). `namespace X` ... `end X` prefix names with `X.`; `_root_.` escapes the
    namespace. Anonymous instances and unmodelled keywords end the previous declaration but
    are not recorded.
    """
    decls: list[dict] = []
    scopes: list[tuple[str, str]] = []  # (kind, name)
    current: dict | None = None

    def finish() -> None:
        nonlocal current
        if current is not None and current["name"] is not None:
            stmt, body = split_statement("\n".join(current.pop("lines")))
            current["type"] = collapse(stmt)
            current["value"] = collapse(body)
            decls.append(current)
        current = None

    for lineno, line in enumerate(strip_comments(text).splitlines(), start=1):
        m = DECL_RE.match(line)
        if m:
            finish()
            keyword, rest = m.group(1), m.group(2)
            if keyword == "instance":
                p = _PRIORITY_RE.match(rest)
                if p:
                    rest = " " + rest[p.end() :]
            nm = _NAME_RE.match(rest)
            name = None
            if nm:
                name = nm.group(1)
                rest = rest[nm.end() :]
                if name.startswith("_root_."):
                    name = name[len("_root_.") :]
                else:
                    prefix = ".".join(n for k, n in scopes if k == "namespace" and n)
                    name = f"{prefix}.{name}" if prefix else name
            if keyword in UNMODELLED:
                name = None
            current = {"name": name, "kind": KINDS.get(keyword), "line": lineno, "lines": [rest]}
            continue
        s = SCOPE_RE.match(line)
        if s:
            finish()
            word, arg = s.group(1), s.group(2)
            if word == "end":
                if scopes:
                    scopes.pop()
            else:
                scopes.append((word, arg))
            continue
        if BOUNDARY_RE.match(line) or NOTATION_RE.match(line):
            finish()
            continue
        if current is not None:
            current["lines"].append(line)
    finish()
    return decls


# ---------------------------------------------------------------------------------------------
# modules and "oleans"


def module_path(module: str) -> str:
    return module.replace(".", "/")


def module_of_file(relpath: str) -> str:
    rel = relpath[: -len(".lean")] if relpath.endswith(".lean") else relpath
    return ".".join(p for p in rel.split("/") if p not in ("", "."))


def is_submitted(module: str) -> bool:
    return module == "Submission" or module.startswith("Submission.")


def find_olean(module: str, search_path: list[str]) -> str | None:
    for d in search_path:
        cand = os.path.join(d, module_path(module) + ".olean")
        if os.path.isfile(cand):
            return cand
    return None


def read_olean(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict) or data.get("format") != OLEAN_FORMAT:
        raise ElabError(f"{path}: not a stand-in olean")
    return data


def load_environment(imports: list[str], search_path: list[str]) -> tuple[dict, list[str], list[dict]]:
    """Load imported oleans transitively. Imports with no olean on the search path are
    dependency modules (Mathlib, ...), which the model does not have: they declare nothing.

    Returns (constants by name, loaded module names, loaded oleans).
    """
    constants: dict[str, dict] = {}
    loaded: list[str] = []
    oleans: list[dict] = []
    seen: set[str] = set()

    def visit(module: str) -> None:
        if module in seen:
            return
        seen.add(module)
        path = find_olean(module, search_path)
        if path is None:
            return
        data = read_olean(path)
        for dep in data.get("imports", []):
            visit(dep)
        loaded.append(module)
        oleans.append(data)
        for c in data.get("decls", []):
            constants.setdefault(c["name"], dict(c, module=module))

    for imp in imports:
        visit(imp)
    return constants, loaded, oleans


def resolve_refs(body: str, known: dict) -> list[str]:
    """Names a body refers to: a token names a declaration when it equals its full name or a
    dot-suffix of it (an over-approximation of namespaces and `open`); tactic axioms map to
    their axiom; builtin axioms match by full name only. A dotted token none of whose names
    matches is resolved as Lean does: its longest prefix that names something, the rest being
    field notation on it (`cheat.elim` with no constant `cheat.elim` uses `cheat`)."""
    refs: dict[str, None] = {}
    for tok in identifiers(body):
        if tok in TACTIC_AXIOMS:
            refs.setdefault(TACTIC_AXIOMS[tok], None)
            continue
        parts = tok.split(".")
        for end in range(len(parts), 0, -1):
            head = ".".join(parts[:end])
            if head in BUILTIN_AXIOMS:
                refs.setdefault(head, None)
                break
            found = [name for name in known if name == head or name.endswith("." + head)]
            for name in found:
                refs.setdefault(name, None)
            if found:
                break
    return list(refs)


def parse_notations(text: str) -> list[dict]:
    """Notation and macro commands of a file: [{line, local, atoms, expansion}] in file order.
    A command runs to the next declaration, scope, boundary or notation line; its atoms are the
    string literals before its first `=>`, its expansion the text after it."""
    found: list[dict] = []
    current: dict | None = None
    for lineno, line in enumerate(strip_comments(text).splitlines(), start=1):
        m = NOTATION_RE.match(line)
        if m or DECL_RE.match(line) or SCOPE_RE.match(line) or BOUNDARY_RE.match(line):
            current = None
        if m:
            current = {"line": lineno, "local": bool(m.group(1)), "lines": [m.group(2)]}
            found.append(current)
        elif current is not None:
            current["lines"].append(line)
    out = []
    for n in found:
        head, arrow, expansion = "\n".join(n.pop("lines")).partition("=>")
        atoms = [a[1:-1].strip() for a in _STRING_RE.findall(head)]
        if arrow and any(atoms):
            out.append(dict(n, atoms=[a for a in atoms if a], expansion=collapse(expansion)))
    return out


def _uses(body: str, atom: str) -> bool:
    if _IDENT_RE.fullmatch(atom):  # an identifier-like atom is a token (or a dotted one's head)
        return any(t == atom or t.startswith(atom + ".") for t in identifiers(body))
    return atom in _STRING_RE.sub(" ", body)


def expand_notations(body: str, notations: list[dict]) -> str:
    """`body` followed by the expansion of every notation it uses, to a fixed point (an
    expansion may use another notation)."""
    used: set[int] = set()
    while True:
        more = [i for i, n in enumerate(notations) if i not in used
                and any(_uses(body, a) for a in n["atoms"])]
        if not more:
            return body
        used.update(more)
        body = body + " " + " ".join(notations[i]["expansion"] for i in more)


def elaborate(module: str, text: str, env: dict, imported: list[dict] | None = None
              ) -> list[dict]:
    """Constants a file adds to `env`. The Solution bridge: in a non-submitted file, a
    declaration `N` whose body mentions `Submission.N` takes the kind and statement of the
    submitted `Submission.N` it delegates to, and is left out when that does not exist.
    `imported`: the notations of the imported modules (`exported_notations`), in scope
    everywhere; this file's own are in scope after their line."""
    decls = parse_declarations(text)
    notations = parse_notations(text)
    known = dict(env)
    for d in decls:
        if d["name"] in known or d["name"] in BUILTIN_AXIOMS:
            raise ElabError(f"'{d['name']}' has already been declared", d["line"])
        known[d["name"]] = d
    out = []
    for d in decls:
        bridge = "Submission." + d["name"]
        if not is_submitted(module) and bridge in identifiers(d["value"]):
            target = known.get(bridge)
            if target is None:
                continue
            d = dict(d, kind=target["kind"], type=target["type"])
        scope = (imported or []) + [n for n in notations if n["line"] < d["line"]]
        refs = [r for r in resolve_refs(expand_notations(d["value"], scope), known)
                if r != d["name"]]
        out.append({k: d[k] for k in ("name", "kind", "type", "value", "line")} | {"refs": refs})
    return out


def exported_notations(text: str) -> list[dict]:
    """What an olean keeps of a file's notations: those not `local` (a `scoped` one counts as
    exported: the model has no `open` scopes)."""
    return [{"atoms": n["atoms"], "expansion": n["expansion"]}
            for n in parse_notations(text) if not n["local"]]


def builtin_constant(name: str) -> dict:
    return {"name": name, "kind": "axiom", "type": BUILTIN_AXIOMS[name], "value": "", "refs": [],
            "module": "Init"}
