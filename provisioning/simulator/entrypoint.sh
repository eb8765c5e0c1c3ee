#!/bin/sh
# Backfills PAIRWISE_MINUTES of the scenario into the Prometheus data volume
# (first start only), then serves the same scenario live from the same start,
# so the live counters continue the backfilled ones.
set -eu
data=${PAIRWISE_DATA:-/prometheus}
scenario=${PAIRWISE_SCENARIO:-regression}
minutes=${PAIRWISE_MINUTES:-60}
seed=${PAIRWISE_SEED:-1}
if [ ! -f "$data/pairwise-start" ]; then
  now=$(date -u +%s)
  # Ending at the next minute leaves no gap before the first live scrape.
  start=$(( (now / 60 + 1) * 60 - minutes * 60 ))
  pairwise simulate --backfill "$data" --minutes "$minutes" --start "$start" \
    --scenario "$scenario" --seed "$seed" --gen /usr/local/bin/pairwise-gen
  echo "$start" >"$data/pairwise-start"
  # Prometheus runs as nobody.
  chown -R 65534:65534 "$data"
fi
start=$(cat "$data/pairwise-start")
if [ $(( $(date -u +%s) - start )) -gt $(( 6 * 24 * 3600 )) ]; then
  start=$(( $(date -u +%s) / 60 * 60 ))  # too old to replay: start afresh (a counter reset)
fi
exec pairwise simulate --listen 0.0.0.0:9464 --start "$start" --scenario "$scenario" --seed "$seed"
