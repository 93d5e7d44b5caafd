#!/usr/bin/env bash
# The long fault campaign: TRIALS seeded trials of kills (before, during and
# after init, mid-run), stops, strangers, mismatched calls, concurrent use
# and aborts (tests/chaos/trial_plan.h), one after another, each bounded in
# time. Prints one table (category | trials | hangs | wrong | crashes |
# misnamed | unreported | time from fault to error) and keeps every trial's
# line in RESULTS/trials.tsv. Exit status 1 if any trial found a problem.
#
#   bench/chaos/campaign.sh TRIALS SEED [BUILD_DIR]
#   RESULTS=dir bench/chaos/campaign.sh 1000 1
set -euo pipefail
cd "$(dirname "$0")/../.."
trials=${1:?usage: campaign.sh TRIALS SEED [BUILD_DIR]}
seed=${2:?usage: campaign.sh TRIALS SEED [BUILD_DIR]}
build=${3:-build}
program="$build/tests/chaos/chaos_campaign"
[ -x "$program" ] || { echo "campaign.sh: $program is not built (run scripts/setup.sh)" >&2; exit 2; }
results=${RESULTS:-$(mktemp -d -t hora-chaos-XXXXXX)}
mkdir -p "$results"
echo "# hora fault campaign: $trials trials, seed $seed, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores"
echo "# per-trial records: $results/trials.tsv; problems: $results/problems.txt"
start=$(date +%s)
status=0
"$program" "$trials" "$seed" "$results/trials.tsv" 2>"$results/problems.txt" || status=$?
echo "# $(( $(date +%s) - start )) s"
exit $status
