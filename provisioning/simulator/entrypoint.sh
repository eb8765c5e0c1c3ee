#!/bin/sh
# Backfills PAIRWISE_MINUTES of the scenario into the Prometheus data volume
# (first start only), with the rule pack's records over the same history,
# then serves the same scenario live from the same start, so the live
# counters continue the backfilled ones.
set -eu
data=${PAIRWISE_DATA:-/prometheus}
scenario=${PAIRWISE_SCENARIO:-regression}
minutes=${PAIRWISE_MINUTES:-60}
seed=${PAIRWISE_SEED:-1}
# The path Prometheus loads the pack from: a group's evaluation offset
# depends on it, and the backfilled records must fall where Prometheus's own
# evaluations will.
rules=${PAIRWISE_RULES:-/etc/prometheus/rules/pairwise.rules.yml}
gen=${PAIRWISE_GEN:-/usr/local/bin/pairwise-gen}
listen=${PAIRWISE_LISTEN:-0.0.0.0:9464}
history="scenario=$scenario seed=$seed minutes=$minutes"
if [ ! -f "$data/pairwise-start" ]; then
  # pairwise-start is written last: a volume with data but without it holds
  # a first start that did not finish (pairwise-gen refuses to write into it).
  if [ -n "$(ls -A "$data" 2>/dev/null)" ]; then
    echo "pairwise-simulator: the data volume holds data but no finished backfill (a first start that was stopped?): run 'docker compose down -v' to start over" >&2
    exit 1
  fi
  now=$(date -u +%s)
  # Ending at the next minute leaves no gap before the first live scrape.
  start=$(( (now / 60 + 1) * 60 - minutes * 60 ))
  pairwise simulate --backfill "$data" --minutes "$minutes" --start "$start" \
    --scenario "$scenario" --seed "$seed" --gen "$gen"
  # The pack's recorded minutes and window sums over the same history: from
  # raw history alone, Prometheus would decide on the minutes it records
  # itself, and the pack's panels would stay empty for an hour.
  pairwise-backfill --tsdb "$data" --rules "$rules" --start "$((start + 60))" --end "$((start + minutes * 60))"
  echo "$history" >"$data/pairwise-history"
  echo "$start" >"$data/pairwise-start"
  # Prometheus runs as nobody (in the image this runs as root).
  if [ "$(id -u)" -eq 0 ]; then chown -R 65534:65534 "$data"; fi
fi
# The volume holds one scenario's history; serving another from its start
# would break every counter (a false reset at the switch).
was=$(cat "$data/pairwise-history" 2>/dev/null || echo "an older simulator's")
if [ "$was" != "$history" ]; then
  echo "pairwise-simulator: the data volume holds the history of $was, not $history: run 'docker compose down -v' to start over with it" >&2
  exit 1
fi
start=$(cat "$data/pairwise-start")
if [ $(( $(date -u +%s) - start )) -gt $(( 6 * 24 * 3600 )) ]; then
  start=$(( $(date -u +%s) / 60 * 60 ))  # too old to replay: start afresh (a counter reset)
fi
exec pairwise simulate --listen "$listen" --start "$start" --scenario "$scenario" --seed "$seed"
