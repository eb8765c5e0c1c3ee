#!/usr/bin/env bash
# Pairwise demo: an hour of paired-fleet canary, judged in seconds, then live.
#
#   scripts/demo.sh [--scenario regression] [--minutes 60] [--seed 1] [--once]
#
# 1. builds the pinned Prometheus 3.13.5 and Alertmanager 0.31.1 (tools/install.sh,
#    cached), the pairwise command and the pairwise-gen backfill generator;
# 2. backfills --minutes of the scenario ending at the current minute (a TSDB),
#    and the rule pack's records over them (pairwise-backfill);
# 3. starts, on 127.0.0.1 only: the simulator continuing the same scenario live,
#    Prometheus on the backfill (scraping the simulator every 15 s with native and
#    classic histograms, the rule pack rules/pairwise.rules.yml loaded), Alertmanager
#    with rules/alertmanager/alertmanager.yml (its webhooks pointed at a local
#    receiver), and that receiver (pairwise webhook), which prints one JSON line
#    per alert;
# 4. prints the judge's minute-by-minute table and decision at once, then every
#    minute, and every alert the receiver gets (the rollback, for regression).
# Ctrl-C stops everything it started.
#
# --once: do all of it once, print the table and decision, wait (at most
# PAIRWISE_DEMO_ALERT_WAIT seconds, default 180) for the rollback alert when the
# decision is ROLLBACK, stop everything and exit 0 (1 if the alert never came).
#
# Ports: the first free port from PAIRWISE_{PROMETHEUS,ALERTMANAGER,SIMULATOR,WEBHOOK}_PORT
# (defaults 19090, 19093, 19464, 19095). Work files: PAIRWISE_DEMO_DIR (default a
# fresh temporary directory, removed at exit unless PAIRWISE_DEMO_KEEP=1 or the demo
# failed).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/.tools/bin"

scenario=regression
minutes=60
seed=1
once=0
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --scenario) scenario=${2:?--scenario needs a name}; shift 2 ;;
    --scenario=*) scenario=${1#*=}; shift ;;
    --minutes) minutes=${2:?--minutes needs a number}; shift 2 ;;
    --minutes=*) minutes=${1#*=}; shift ;;
    --seed) seed=${2:?--seed needs a number}; shift 2 ;;
    --seed=*) seed=${1#*=}; shift ;;
    --once) once=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "demo: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
case "$scenario" in
  clean|regression|gc-burst|cold-start|bad-pod|traffic-mix) ;;
  *) echo "demo: unknown scenario $scenario (clean, regression, gc-burst, cold-start, bad-pod, traffic-mix)" >&2; exit 2 ;;
esac

say() { printf '\n==> %s\n' "$*"; }

# ---------------------------------------------------------------- processes
# Everything cleanup reads is set here, before its trap: under set -u, an
# unset one would fail it (a failure or Ctrl-C during the build ended with
# "work: unbound variable" and status 1).
pids=()
tail_pid=
sleep_pid=
work= # the work directory, once made (after the build)
work_is_temp=0
cleanup() {
  local status=$?
  trap - EXIT INT TERM HUP
  trap '' PIPE # a closed terminal or pipe must not stop the cleanup
  [ -n "$tail_pid" ] && kill "$tail_pid" 2>/dev/null || true
  # The live loop's sleep: a background job ignores SIGINT, and left
  # behind it holds the terminal's pipe (| tee) open until it ends.
  [ -n "$sleep_pid" ] && kill "$sleep_pid" 2>/dev/null || true
  if [ ${#pids[@]} -gt 0 ]; then
    echo
    echo "demo: stopping ${#pids[@]} processes (${pids[*]})" || true
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  fi
  # A failed demo (status 1) keeps its logs: its message points at them.
  if [ -z "$work" ]; then
    : # stopped before the work directory was made
  elif [ "$work_is_temp" = 1 ] && [ "${PAIRWISE_DEMO_KEEP:-0}" != 1 ] && [ "$status" != 1 ]; then
    rm -rf "$work"
  else
    echo "demo: logs and data kept in $work" || true
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
trap 'exit 141' PIPE

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
taken=" "
pick_port() { # pick_port DEFAULT: the first free port from DEFAULT on, not picked before
  local p=$1
  while ! port_free "$p" || [[ "$taken" == *" $p "* ]]; do p=$((p + 1)); done
  taken="$taken$p "
  echo "$p"
}

command -v curl > /dev/null || { echo "demo: curl is needed (apt-get install curl)" >&2; exit 1; }

wait_http() { # wait_http NAME URL LOG: up to 60 s
  local i
  for i in $(seq 1 120); do
    if curl -fsS -o /dev/null "$2" 2>/dev/null; then return 0; fi
    sleep 0.5
  done
  echo "demo: $1 did not come up at $2; last lines of $3:" >&2
  tail -n 20 "$3" >&2
  return 1
}

# ---------------------------------------------------------------- build
say "tools: pinned Prometheus and Alertmanager (tools/install.sh; cached after the first run)"
PAIRWISE_SKIP_THANOS=1 bash "$root/tools/install.sh"

say "build: pairwise, pairwise-gen and pairwise-backfill into .tools/bin"
export GOTOOLCHAIN=local
(cd "$root" && go build -o "$bin/pairwise" ./cmd/pairwise)
(cd "$root/tools" && go build -o "$bin/pairwise-gen" ./cmd/pairwise-gen)
(cd "$root/tools" && go build -o "$bin/pairwise-backfill" ./cmd/pairwise-backfill)

if [ -n "${PAIRWISE_DEMO_DIR:-}" ]; then
  work=$PAIRWISE_DEMO_DIR
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/pairwise-demo.XXXXXX")
  work_is_temp=1
fi

prom_port=$(pick_port "${PAIRWISE_PROMETHEUS_PORT:-19090}")
am_port=$(pick_port "${PAIRWISE_ALERTMANAGER_PORT:-19093}")
sim_port=$(pick_port "${PAIRWISE_SIMULATOR_PORT:-19464}")
hook_port=$(pick_port "${PAIRWISE_WEBHOOK_PORT:-19095}")
prom_url="http://127.0.0.1:$prom_port"

# ---------------------------------------------------------------- backfill
# The history ends at the next whole minute T0 (less than a minute ahead: the
# simulation is deterministic, so those seconds are already known). Prometheus
# opened on the backfill refuses samples older than its newest block, so live
# scrapes are stored from T0 on: without a gap, the first live minute is
# complete. The simulator counts from the same start, so its live samples
# continue the backfilled series without a reset.
now=$(date -u +%s)
end=$(((now / 60 + 1) * 60))
start=$((end - minutes * 60))
start_rfc=$(date -u -d "@$start" +%Y-%m-%dT%H:%M:%SZ)
end_rfc=$(date -u -d "@$end" +%Y-%m-%dT%H:%M:%SZ)
sim_flags=(--scenario "$scenario" --seed "$seed" --start "$start_rfc")

say "backfill: $minutes minutes of the $scenario scenario, $start_rfc .. $end_rfc"
rm -rf "$work/data"
"$bin/pairwise" simulate --backfill "$work/data" --minutes "$minutes" --gen "$bin/pairwise-gen" \
  --truth "$work/truth.json" "${sim_flags[@]}"

# The rule pack records each fleet's minutes and sums its windows over those
# records, so a Prometheus started on raw history alone would decide on the
# minutes it records itself. pairwise-backfill evaluates the pack over the
# history first, with Prometheus's rule engine and the same file path (so the
# same evaluation offsets); its last evaluation is at or before T0, so the
# live scrapes from T0 on are still accepted.
say "backfill: the rule pack over the same history (pairwise-backfill)"
"$bin/pairwise-backfill" --tsdb "$work/data" --rules "$root/rules/pairwise.rules.yml" \
  --start "$((start + 60))" --end "$end"

# ---------------------------------------------------------------- servers
say "start: webhook receiver, Alertmanager, simulator, Prometheus (127.0.0.1, logs in $work)"

"$bin/pairwise" webhook --listen "127.0.0.1:$hook_port" >"$work/webhook.log" 2>&1 &
pids+=($!)

# Alertmanager: the rule pack's example config, every webhook URL pointed at the
# local receiver (the path is kept). --once shortens group_wait so the test is quick.
am_src="$root/rules/alertmanager/alertmanager.yml"
if [ -f "$am_src" ]; then
  sed -E "s#((url|url_file):[[:space:]]*['\"]?)https?://[^/'\"[:space:]]+#\1http://127.0.0.1:$hook_port#" "$am_src" >"$work/alertmanager.yml"
else
  echo "demo: $am_src is missing; using a minimal route to the receiver"
  cat >"$work/alertmanager.yml" <<EOF
route:
  receiver: pairwise-webhook
  group_by: [alertname, canary]
  group_wait: 10s
  group_interval: 1m
  repeat_interval: 1h
receivers:
  - name: pairwise-webhook
    webhook_configs:
      - url: http://127.0.0.1:$hook_port/rollback
        send_resolved: true
EOF
fi
if [ "$once" = 1 ]; then
  sed -i -E 's/(group_wait:[[:space:]]*)[0-9]+[smh]/\15s/' "$work/alertmanager.yml"
fi
# A fresh notification log: one kept from an earlier run in the same
# PAIRWISE_DEMO_DIR holds the rollback as sent, and Alertmanager would not
# send it again before repeat_interval (30m).
rm -rf "$work/alertmanager"
"$bin/alertmanager" --config.file="$work/alertmanager.yml" --storage.path="$work/alertmanager" \
  --web.listen-address="127.0.0.1:$am_port" --cluster.listen-address= \
  >"$work/alertmanager.log" 2>&1 &
pids+=($!)

"$bin/pairwise" simulate --listen "127.0.0.1:$sim_port" "${sim_flags[@]}" >"$work/simulator.log" 2>&1 &
pids+=($!)

eval_interval=15s
[ "$once" = 1 ] && eval_interval=5s
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 15s
  evaluation_interval: $eval_interval
rule_files:
  - $root/rules/pairwise.rules.yml
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['127.0.0.1:$am_port']
scrape_configs:
  - job_name: pairwise-simulator
    # The simulator exposes the job and instance labels of its pods (the same
    # as the backfill's); honor_labels keeps them.
    honor_labels: true
    scrape_native_histograms: true
    always_scrape_classic_histograms: true
    static_configs:
      - targets: ['127.0.0.1:$sim_port']
EOF
"$bin/prometheus" --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$prom_port" \
  >"$work/prometheus.log" 2>&1 &
pids+=($!)

wait_http "the webhook receiver" "http://127.0.0.1:$hook_port/" "$work/webhook.log"
wait_http Alertmanager "http://127.0.0.1:$am_port/-/ready" "$work/alertmanager.log"
wait_http "the simulator" "http://127.0.0.1:$sim_port/metrics" "$work/simulator.log"
wait_http Prometheus "$prom_url/-/ready" "$work/prometheus.log"

cat <<EOF
  Prometheus    $prom_url  (rules: $prom_url/rules, alerts: $prom_url/alerts)
  Alertmanager  http://127.0.0.1:$am_port
  simulator     http://127.0.0.1:$sim_port/metrics  ($scenario, seed $seed, start $start_rfc)
  webhook       http://127.0.0.1:$hook_port  (prints the alerts it receives)
EOF

# ---------------------------------------------------------------- judge
judge() { # judge [extra judge flags]: prints the table; returns the decision code
  local code=0
  "$bin/pairwise" judge --prometheus "$prom_url" --metric http_request_duration_seconds \
    --baseline '{service="checkout",track="baseline"}' --canary '{service="checkout",track="canary"}' \
    --histogram native --expected-share 0.05 --errors-metric http_requests_total --output table "$@" || code=$?
  return "$code"
}

say "judge: the 60 minutes ending $end_rfc, backfilled (pairwise judge --output table)"
decision=0
judge --at "$end_rfc" || decision=$?
case "$decision" in
  0) echo "demo: decision PROMOTE (exit 0)" ;;
  1) echo "demo: decision HOLD (exit 1)" ;;
  2) echo "demo: decision ROLLBACK (exit 2): the rule pack's PairwiseCanaryRollback alert should reach the webhook" ;;
  *) echo "demo: the judge failed (exit $decision); see $work/prometheus.log" >&2; exit 1 ;;
esac

if [ "$once" = 1 ]; then
  if [ "$decision" != 2 ]; then
    echo "demo: no rollback expected for $scenario; done"
    exit 0
  fi
  wait_s=${PAIRWISE_DEMO_ALERT_WAIT:-180}
  # The receiver prints one JSON line per alert; JSON escapes every quote
  # inside a value, so only a real alert has this sequence of fields.
  rollback_alert='^{"time":"[^"]*","event":"firing","status":"firing","alertname":"PairwiseCanaryRollback",'
  echo "demo: waiting up to ${wait_s}s for the rollback alert at the webhook..."
  began=$(date +%s)
  while ! grep -q "$rollback_alert" "$work/webhook.log"; do
    if [ $(($(date +%s) - began)) -ge "$wait_s" ]; then
      echo "demo: no rollback alert within ${wait_s}s; Prometheus alerts:" >&2
      curl -fsS "$prom_url/api/v1/alerts" >&2 || true
      echo >&2
      tail -n 20 "$work/alertmanager.log" >&2
      exit 1
    fi
    sleep 1
  done
  grep '^{' "$work/webhook.log" | sed 's/^/webhook: /'
  echo "demo: rollback alert received $(($(date +%s) - began))s after the first table"
  exit 0
fi

# Live: the receiver's lines as they come, and the judge every minute (35 s
# into the minute, so the minute that just ended has its last scrape).
tail -n +1 -f "$work/webhook.log" | sed -u 's/^/webhook: /' &
tail_pid=$!
echo "demo: live now; the table refreshes every minute. Ctrl-C stops everything."
while true; do
  now=$(date +%s)
  sleep $(( (now / 60 + 1) * 60 + 35 - now )) &
  sleep_pid=$!
  wait $sleep_pid # a signal interrupts wait at once, and the trap runs
  sleep_pid=
  say "judge at $(date -u +%H:%M:%S) UTC: the last 60 minutes"
  judge || true
done
