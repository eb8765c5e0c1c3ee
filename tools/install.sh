#!/usr/bin/env bash
# Builds the pinned Prometheus 3.13.5 + promtool, Alertmanager 0.31.1 + amtool
# and Thanos 0.42.4 into .tools/bin of the project. Idempotent: a binary
# already at the pinned version is kept, so a second run takes a second.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin="$root/.tools/bin"
mkdir -p "$bin"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

# with_progress CMD...: runs CMD, printing a line every 30 s so a long cold
# build is visibly alive.
with_progress() {
  "$@" &
  local pid=$! start=$SECONDS
  # A script's background command ignores SIGINT: on Ctrl-C this script
  # would end and leave the build running, writing into .tools/bin. Stop it
  # on SIGINT and SIGTERM, and exit as the signal would.
  trap "kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; exit 130" INT
  trap "kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; exit 143" TERM
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    if kill -0 "$pid" 2>/dev/null && (( (SECONDS - start) % 30 < 5 )); then
      echo "tools: ... still building ($((SECONDS - start)) s)"
    fi
  done
  trap - INT TERM
  wait "$pid"
}

have() { # have BINARY EXPECTED_VERSION_SUBSTRING
  [ -x "$bin/$1" ] && "$bin/$1" --version 2>&1 | grep -q "$2"
}

if have prometheus "version 3.13.5" && have promtool "version 3.13.5"; then
  echo "tools: prometheus 3.13.5 and promtool already built"
else
  echo "tools: building prometheus 3.13.5 and promtool (about 8 minutes on a cold cache)..."
  (cd "$here" && GOBIN="$bin" with_progress go install \
     -ldflags "-X github.com/prometheus/common/version.Version=3.13.5" \
     github.com/prometheus/prometheus/cmd/prometheus \
     github.com/prometheus/prometheus/cmd/promtool)
fi

if have alertmanager "version 0.31.1" && have amtool "version 0.31.1"; then
  echo "tools: alertmanager 0.31.1 and amtool already built"
else
  echo "tools: building alertmanager 0.31.1 and amtool (about a minute)..."
  (cd "$root" && GOFLAGS= GOBIN="$bin" with_progress go install \
     -ldflags "-X github.com/prometheus/common/version.Version=0.31.1" \
     github.com/prometheus/alertmanager/cmd/alertmanager@v0.31.1 \
     github.com/prometheus/alertmanager/cmd/amtool@v0.31.1)
fi
# Thanos 0.42.4 (sidecar, query, rule) for the tests that run the judge and the
# rule pack against Thanos. Not 0.42.5: its go.mod asks for go >= 1.26.10, and
# with GOTOOLCHAIN=local the go here (1.26.8) refuses it; that go line is all
# 0.42.5 changes in Thanos's Go code and go.mod. Built in the wrapper
# module tools/thanos, whose go.mod copies Thanos's replace directives: `go
# install ...@v0.42.4` refuses a module that has replace directives. The
# build tags are those of Thanos's releases (.promu.yml): without slicelabels
# the sidecar panics on its first gRPC answer (Thanos's protobuf code reads
# Prometheus labels as a slice).
if [ "${PAIRWISE_SKIP_THANOS:-}" = 1 ]; then
  echo "tools: thanos skipped (PAIRWISE_SKIP_THANOS=1; only the Thanos tests need it)"
elif have thanos "version 0.42.4" && "$bin/thanos" --version 2>&1 | grep -q "tags:.*slicelabels"; then
  echo "tools: thanos 0.42.4 already built"
else
  echo "tools: building thanos 0.42.4 (about 3.5 minutes of CPU, more on a busy machine; a cold module cache first downloads about 250 MB)..."
  (cd "$here/thanos" && with_progress go build -o "$bin/.thanos.$$" -tags netgo,slicelabels \
     -ldflags "-X github.com/prometheus/common/version.Version=0.42.4" \
     github.com/thanos-io/thanos/cmd/thanos)
  mv "$bin/.thanos.$$" "$bin/thanos"
fi
"$bin/prometheus" --version | head -1
"$bin/alertmanager" --version | head -1
[ -x "$bin/thanos" ] && "$bin/thanos" --version 2>&1 | head -1
exit 0
