#!/usr/bin/env bash
# Runs the Pairwise benchmarks (cmd/pairwise-bench) side by side in one run on
# the pinned Prometheus 3.13.5 and generated data, prints the summary table and
# writes docs/benchmarks.md. Not part of the normal test run.
#
#   scripts/bench.sh            full run (about 45 min on 2 cores, most of it the judgement
#                               matrix), writes docs/benchmarks.md
#   scripts/bench.sh --smoke    small sizes (< 60 s, two judgement cells and the parity check
#                               against Prometheus), prints the summary only; exits non-zero only
#                               if something could not be measured or the in-process judgement
#                               path disagrees with Prometheus + engine (missed targets are reported)
#
# Extra flags go to pairwise-bench: --cache DIR keeps generated data sets between runs,
# --reps N, --only efficiency,scale,accuracy,judgement,panel, --doc FILE,
# --judge-matrix smoke|quick|full, --workers N (goroutines simulating judgement cells, default 2),
# --stalls EVERY,SECONDS (every pod of the in-process judgement cells pauses for SECONDS about once
# every EVERY minutes: clumped tails, see docs/judgement.md).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .tools/bin/prometheus ]; then
  bash tools/install.sh
fi
export PAIRWISE_TOOLS_BIN="${PAIRWISE_TOOLS_BIN:-$PWD/.tools/bin}"
exec go run ./cmd/pairwise-bench --command "scripts/bench.sh $*" "$@"
