#!/usr/bin/env bash
# Submit one lean-eval batch to Slurm: an array job of N shards, then a merge job that starts
# once every shard has ended, however it ended (--dependency=afterany on the array job): it
# merges the shards that wrote an output and names the rest. Re-submitting the same command
# resumes: each shard keeps the verdicts it already wrote, and the merge is redone.
#
# Usage: slurm-submit.sh SHARDS SUBMISSIONS_DIR RESULTS_DIR [sbatch options...]
#   SHARDS           number of shards (array tasks), at least 1
#   SUBMISSIONS_DIR  directory whose entries are the submissions (directories or archives)
#   RESULTS_DIR      shared directory: RESULTS_DIR/shard-<i>/ per shard, RESULTS_DIR/merged/
# Extra arguments go to both sbatch calls (for example --partition=... --account=..., or
# --cpus-per-task=... --mem=... to size the tasks: README.md here, "Sizing a task").
# Run from a checkout of the benchmark, with lean-eval installed and `lean-eval prepare` done on
# the nodes (or on the shared file system they use).
set -euo pipefail

if [ "$#" -lt 3 ]; then
  echo "usage: $0 SHARDS SUBMISSIONS_DIR RESULTS_DIR [sbatch options...]" >&2
  exit 2
fi
shards=$1
submissions=$(realpath -- "$2")
results=$(realpath -m -- "$3")
shift 3
case $shards in
  '' | *[!0-9]* | 0) echo "$0: SHARDS must be a positive integer, not '$shards'" >&2; exit 2 ;;
esac
here=$(dirname -- "$(realpath -- "$0")")
mkdir -p -- "$results"

# Array indices 0..N-1: the score script maps task i to shard i+1 of N. Each task's log is
# RESULTS_DIR/shard-<i>.out.
array_job=$(sbatch --parsable --array="0-$((shards - 1))" "$@" \
  --output="$results/shard-%a.out" \
  "$here/slurm-score.sbatch" "$submissions" "$results")
array_job=${array_job%%;*}  # --parsable prints "jobid" or "jobid;cluster"

# afterany, not afterok: a task that fails or is cancelled (scancel, preemption, node failure,
# time limit) never satisfies afterok, and the merge would stay pending forever
# (DependencyNeverSatisfied) with the other shards' verdicts unmerged.
merge_job=$(sbatch --parsable --dependency="afterany:$array_job" "$@" \
  --output="$results/merge.out" \
  "$here/slurm-merge.sbatch" "$results" "$shards")
merge_job=${merge_job%%;*}

echo "shards: job $array_job (array 0-$((shards - 1))); merge: job $merge_job"
echo "results: $results/merged (report: $results/report.md, $results/junit.xml)"
