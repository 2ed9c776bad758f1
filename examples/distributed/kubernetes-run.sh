#!/usr/bin/env bash
# Run one sharded batch on Kubernetes: apply the Indexed Job, wait until it is Complete or
# Failed, then apply the merge Job and wait for it the same way.
#
#   examples/distributed/kubernetes-run.sh [TIMEOUT]     (TIMEOUT for each wait, default 24h)
#
# `kubectl wait --for=condition=complete` alone never returns when an index fails: the Job then
# becomes Failed, not Complete. So both conditions are waited for and the first one decides.
# The merge runs after a Failed shard Job too: it merges the shards that wrote an output, names
# the others and lists their pairs. Running the script again deletes both Jobs first and starts
# them afresh: each shard resumes into its shard-i (verdicts kept) and the merge is redone, as
# re-submitting the Slurm recipe does. Exit status: 0 when both Jobs completed, 1 when either failed,
# 2 on a usage error or when a wait timed out.
set -euo pipefail

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
timeout="${1:-24h}"
[[ $# -le 1 ]] || { echo "usage: kubernetes-run.sh [TIMEOUT]" >&2; exit 2; }

# Print Complete or Failed for job/$1, whichever condition the Job reaches first.
wait_for_job() {
  local job="$1" complete failed
  kubectl wait --for=condition=complete --timeout="$timeout" "job/$job" >/dev/null 2>&1 &
  complete=$!
  kubectl wait --for=condition=failed --timeout="$timeout" "job/$job" >/dev/null 2>&1 &
  failed=$!
  wait -n || true  # the first of the two to end (bash 4.3 or later); its status is read below
  if ! kill -0 "$complete" 2>/dev/null && wait "$complete"; then
    kill "$failed" 2>/dev/null || true
    echo Complete
  elif ! kill -0 "$failed" 2>/dev/null && wait "$failed"; then
    kill "$complete" 2>/dev/null || true
    echo Failed
  else
    kill "$complete" "$failed" 2>/dev/null || true
    echo "job/$job: kubectl wait ended without Complete or Failed (timeout $timeout, or an error)" >&2
    exit 2
  fi
}

# A Job that exists, Complete or Failed, would not run again on apply: start both afresh.
kubectl delete job lean-eval-shards lean-eval-merge --ignore-not-found --wait=true
kubectl apply -f "$here/kubernetes-shards.yaml"
shards="$(wait_for_job lean-eval-shards)"
echo "job/lean-eval-shards: $shards"
kubectl apply -f "$here/kubernetes-merge.yaml"
merged="$(wait_for_job lean-eval-merge)"
echo "job/lean-eval-merge: $merged"
[[ "$shards" == Complete && "$merged" == Complete ]] || exit 1
