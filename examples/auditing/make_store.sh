#!/usr/bin/env bash
# Build, under DIR, what docs/auditing.md audits: upstream/, a git history of a benchmark source
# in the lean-eval layout (two problems; then one statement changed without a new
# statement_revision), and results/alice.json, a results store naming its commits: a record
# scored before the change, one after it, and one of the unchanged problem. The commits are
# made with fixed names and dates, so their ids are the same on every machine.
set -euo pipefail
dir=${1:?usage: make_store.sh DIR}
mkdir -p "$dir/upstream" "$dir/results"
cd "$dir/upstream"
export GIT_AUTHOR_NAME=maintainer GIT_AUTHOR_EMAIL=maintainer@example.invalid \
    GIT_COMMITTER_NAME=maintainer GIT_COMMITTER_EMAIL=maintainer@example.invalid \
    GIT_AUTHOR_DATE=2026-05-01T00:00:00Z GIT_COMMITTER_DATE=2026-05-01T00:00:00Z
git init -q -b main

problem() {  # ID STATEMENT: its manifest (revision 1) and the Challenge.lean of its one hole
    mkdir -p manifests/problems "generated/$1"
    printf 'id = "%s"\nstatement_revision = 1\nholes = ["%s_holds"]\n' "$1" "$1" \
        > "manifests/problems/$1.toml"
    printf 'import Mathlib\n\ntheorem %s_holds : %s := by\n  sorry\n' "$1" "$2" \
        > "generated/$1/Challenge.lean"
}

problem odd_square '∀ n : Nat, n % 2 = 1 → n * n % 2 = 1'
problem sum_bound '∀ n : Nat, n ≤ n * n + 1'
git add -A
git commit -qm "two problems"
first=$(git rev-parse HEAD)
problem odd_square '∀ n : Nat, n % 2 = 1 → n * n % 8 = 1'
git commit -qam "odd_square: a stronger statement, its revision kept"
second=$(git rev-parse HEAD)

record() {  # PROBLEM COMMIT MODEL: one record as the public store holds it
    local id
    id=$(printf '%s/%s/%s' "$1" "$2" "$3" | sha256sum | cut -c1-64)
    printf '{"result_id": "r2_%s", "problem_id": "%s", "statement_revision": 1, ' "$id" "$1"
    printf '"declared_model": "%s", "accepted_at": "2026-05-02T00:00:00Z", ' "$3"
    printf '"benchmark_commit": "%s", "intake": {"kind": "issue", "issue_number": 1}, ' "$2"
    printf '"submission": {"kind": "gist", "repo": "alice/0123abcd", "ref": "%s", ' "$first"
    printf '"public": true}, "production_metadata": {}}'
}

{
    printf '{"schema_version": 2, "user": "alice", "results": [\n'
    record odd_square "$first" "Model A"
    printf ',\n'
    record sum_bound "$first" "Model A"
    printf ',\n'
    record odd_square "$second" "Model B"
    printf '\n]}\n'
} > ../results/alice.json
