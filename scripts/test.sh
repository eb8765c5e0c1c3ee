#!/usr/bin/env bash
# Runs every Pairwise test: Go (unit, conformance, live Prometheus and
# Alertmanager, rule pack), TypeScript (typecheck, lint, Jest), the plugin
# build, and the panel in headless Chromium. Installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

step() { printf '\n== %s\n' "$*"; }
export PAIRWISE_TOOLS_BIN="$PWD/.tools/bin"

step "gofmt and go vet"
unformatted=$(gofmt -l pkg cmd internal tools/cmd Magefile.go)
if [ -n "$unformatted" ]; then echo "gofmt wants to change: $unformatted"; exit 1; fi
go vet ./pkg/... ./cmd/... ./internal/...
(cd tools && go vet ./cmd/...)

step "go test (engine, data source, judge, rule pack, live Prometheus and Alertmanager)"
go test -count=1 ./pkg/... ./cmd/... ./internal/...
(cd tools && go test -count=1 ./cmd/...)

step "fuzz seed corpora and a short fuzz run"
go test -count=1 -run '^Fuzz' ./pkg/selector/ ./pkg/plugin/
go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 10s ./pkg/selector/
go test -run '^$' -fuzz '^FuzzParseQuery$' -fuzztime 10s ./pkg/plugin/

step "race detector on the data source"
go test -count=1 -race ./pkg/plugin/ ./pkg/engine/

if [ -f package.json ]; then
  step "frontend: typecheck, lint, jest, build"
  npm run typecheck
  npm run lint
  npm test -- --ci
  npm run build
  if npm run | grep -q '^  harness'; then
    step "panel in headless Chromium"
    npm run harness
  fi
fi
echo
echo "all Pairwise tests passed"
