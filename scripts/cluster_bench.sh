#!/usr/bin/env bash
# iggy-bench against a local three-node cluster beside a single node, run
# after run in one session (issue 16's benchmark): 2 pinned producers, 1 KB
# messages in batches of 1,000, topics `replicated` and then `persisted`
# (--fsync). Each run starts on fresh data directories with the page cache
# dropped (needs root for that). The cluster run sends to the metadata
# leader, which leads the new partitions' groups.
#
#   scripts/cluster_bench.sh [ROUNDS]
#   scripts/cluster_bench.sh --ab OLD_SERVER NEW_SERVER [ROUNDS]
#
# With --ab, only the cluster runs, alternating two server builds run after
# run (each line labelled old or new), to measure a change to the cluster.
#
# BIN (default target/release/iggy-server), BENCH (target/release/iggy-bench),
# BATCHES (batches per producer, default 1000), WORKDIR (/tmp/iggy-cluster-bench),
# WARMUP (iggy-bench --warmup-time, default 0s: e.g. 10s measures the rate
# sustained past the page cache's first burst).
# Prints one `total` line of iggy-bench per run (MB/s, then latencies in ms:
# p50 p90 p95 p99 p999 p9999 max), then what the disk under WORKDIR wrote
# during the run (MB, from /proc/diskstats) and how long it was busy.
set -euo pipefail
cd "$(dirname "$0")/.."
ab=
if [[ ${1:-} == --ab ]]; then
  ab=1
  old_bin=$(realpath "$2")
  new_bin=$(realpath "$3")
  shift 3
fi
rounds=${1:-3}
batches=${BATCHES:-1000}
bin=$(realpath "${BIN:-target/release/iggy-server}")
bench=$(realpath "${BENCH:-target/release/iggy-bench}")
work=${WORKDIR:-/tmp/iggy-cluster-bench}
mkdir -p "$work"

# Sectors written and milliseconds busy of the disk holding WORKDIR.
disk_counters() {
  local dev
  dev=$(basename "$(findmnt -no SOURCE -T "$work" 2>/dev/null || echo none)")
  awk -v d="$dev" '$3 == d { print $10, $13; found = 1 } END { if (!found) print 0, 0 }' /proc/diskstats
}

drop_caches() {
  sync
  echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "cannot drop the page cache (not root?)" >&2
}

run() {
  local address=$1
  shift
  local before after line
  read -r -a before <<<"$(disk_counters)"
  line=$("$bench" pinned-producer --producers 2 --message-size 1000 --messages-per-batch 1000 \
    --message-batches "$batches" --warmup-time "${WARMUP:-0s}" --server-address "$address" --username iggy --password iggy \
    --quiet "$@" | grep total || echo "FAILED")
  sync
  read -r -a after <<<"$(disk_counters)"
  echo "$line | disk $(((after[0] - before[0]) / 2048)) MB written, busy $((after[1] - before[1])) ms"
}

single() {
  rm -rf "$work/single"
  mkdir -p "$work/single"
  drop_caches
  (
    cd "$work/single"
    IGGY_ROOT_USERNAME=iggy IGGY_ROOT_PASSWORD=iggy IGGY_TCP_ADDRESS=127.0.0.1:18190 \
      IGGY_HTTP_ADDRESS=127.0.0.1:0 IGGY_QUIC_ADDRESS=127.0.0.1:0 \
      IGGY_WEBSOCKET_ADDRESS=127.0.0.1:0 nohup "$bin" >server.log 2>&1 &
    echo $! >pid
  )
  for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/18190) 2>/dev/null && break
    sleep 0.1
  done
  run 127.0.0.1:18190 "$@"
  kill "$(cat "$work/single/pid")"
  while kill -0 "$(cat "$work/single/pid")" 2>/dev/null; do sleep 0.1; done
}

cluster() {
  rm -rf "$work/cluster"
  drop_caches
  BIN=$bin scripts/cluster.sh start "$work/cluster" >/dev/null
  local leader=
  for _ in $(seq 60); do
    leader=$(scripts/cluster.sh leader "$work/cluster" 2>/dev/null) && break
    sleep 0.5
  done
  if [[ -z $leader ]]; then
    echo "FAILED: no leader"
  else
    run "127.0.0.1:181${leader}0" "$@"
  fi
  scripts/cluster.sh stop "$work/cluster" >/dev/null
}

trap 'scripts/cluster.sh stop "$work/cluster" >/dev/null 2>&1 || true' EXIT
if [[ -n $ab ]]; then
  for round in $(seq "$rounds"); do
    for durability in replicated persisted; do
      flag=
      [[ $durability == persisted ]] && flag=--fsync
      for build in old new; do
        if [[ $build == old ]]; then bin=$old_bin; else bin=$new_bin; fi
        echo "round $round $build cluster $durability: $(cluster $flag)"
      done
    done
  done
  exit 0
fi
for round in $(seq "$rounds"); do
  echo "round $round single  replicated: $(single)"
  echo "round $round cluster replicated: $(cluster)"
  echo "round $round single  persisted:  $(single --fsync)"
  echo "round $round cluster persisted:  $(cluster --fsync)"
done
