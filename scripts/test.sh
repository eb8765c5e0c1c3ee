#!/usr/bin/env bash
# Runs every Pairwise test: Go (unit, conformance, live Prometheus and
# Alertmanager, rule pack), TypeScript (typecheck, lint, Jest), the plugin
# build, and the panel in headless Chromium. Installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

step() { printf '\n== %s\n' "$*"; }
export PAIRWISE_TOOLS_BIN="$PWD/.tools/bin"

step "frontend: typecheck, lint, jest, build (the Go tests check what the build ships)"
npm run typecheck
npm run lint
npm test -- --ci
npm run build
step "backend: mage -v, every platform Grafana runs on (linux, darwin, windows; amd64, arm64, arm)"
started=$(date +%s)
PATH="$PATH:$(go env GOPATH)/bin" mage -v
exe=$(node -p 'require("./src/datasource/plugin.json").executable')
for platform in linux_amd64 linux_arm64 linux_arm darwin_amd64 darwin_arm64 windows_amd64.exe; do
  test -f "dist/datasource/${exe}_${platform}" || { echo "mage did not build dist/datasource/${exe}_${platform}"; exit 1; }
done
echo "mage -v: $(( $(date +%s) - started ))s"

step "Grafana contracts: plugin.json against Grafana's schema, the built backend through the plugin protocol, alerting frames read as Grafana reads them, the provisioned alert rule firing through Alertmanager"
go test -count=1 ./internal/grafana/

step "gofmt and go vet"
unformatted=$(gofmt -l pkg cmd internal tools/cmd Magefile.go)
if [ -n "$unformatted" ]; then echo "gofmt wants to change: $unformatted"; exit 1; fi
go vet ./pkg/... ./cmd/... ./internal/...
(cd tools && go vet ./cmd/...)

step "go test (engine, data source, judge, rule pack, live Prometheus and Alertmanager)"
# TestHarnessFrames keeps the frames it gets from the engine for the panel harness below.
# The rule pack's end-to-end tests in internal/e2e take about 13 minutes on
# their own (Prometheus evaluating the rules): past go test's default 10m.
frames=tests/harness/build/engine
PAIRWISE_HARNESS_FRAMES_DIR="$PWD/$frames" go test -count=1 -timeout 30m $(go list ./pkg/... ./cmd/... ./internal/... | grep -v '/internal/grafana$')
(cd tools && go test -count=1 ./cmd/...)

step "fuzz seed corpora and a short fuzz run"
go test -count=1 -run '^Fuzz' ./pkg/selector/ ./pkg/plugin/
# Budgets in executions, not seconds: a duration-bounded run can end in a
# spurious "context deadline exceeded" with no failing input, a race in Go's
# fuzz coordinator (go.dev/issue/75804, fixed in Go 1.27). About 10 s each here.
go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 100000x ./pkg/selector/
go test -run '^$' -fuzz '^FuzzParseQuery$' -fuzztime 60000x ./pkg/plugin/

step "race detector on the data source"
go test -count=1 -race -run 'TestLiveDatasource|TestParseQuery|TestSecretsStaySecret|TestAnalyze' ./pkg/plugin/ ./pkg/engine/

step "benchmarks, smoke mode (keeps scripts/bench.sh working; figures in docs/benchmarks.md come from a full run)"
bash scripts/bench.sh --smoke

step "panel in headless Chromium, on frames the engine produced from generated data"
npm run harness
node tests/harness/run.mjs "$frames/engine-hour.json" "$frames/engine-day.json" "$frames/engine-deployed.json"
echo
echo "all Pairwise tests passed"
