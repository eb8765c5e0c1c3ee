#!/usr/bin/env bash
# Runs the Pairwise benchmarks (cmd/pairwise-bench) side by side in one run on
# the pinned Prometheus 3.13.5 and generated data, prints the summary table and
# writes docs/benchmarks.md. Not part of the normal test run.
#
#   scripts/bench.sh            full run (~20-30 min on 2 cores), writes docs/benchmarks.md
#   scripts/bench.sh --smoke    small sizes (< 60 s), prints the summary only; exits non-zero
#                               only if something could not be measured (missed targets are reported)
#
# Extra flags go to pairwise-bench: --cache DIR keeps generated data sets between runs,
# --reps N, --only efficiency,scale,accuracy,judgement,panel, --doc FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .tools/bin/prometheus ]; then
  bash tools/install.sh
fi
export PAIRWISE_TOOLS_BIN="${PAIRWISE_TOOLS_BIN:-$PWD/.tools/bin}"
exec go run ./cmd/pairwise-bench --command "scripts/bench.sh $*" "$@"
