#!/usr/bin/env bash
# A local three-node cluster on 127.0.0.1.
#
#   scripts/cluster.sh start [DIR]   build iggy-server (release) and start
#                                    nodes 0, 1, 2 under DIR (default
#                                    target/cluster); prints their ports
#   scripts/cluster.sh stop  [DIR]   stop them (SIGTERM, then SIGKILL)
#   scripts/cluster.sh status [DIR]  which nodes run
#   scripts/cluster.sh leader [DIR]  the metadata leader's node number
#
# Node N listens on TCP 181N0, HTTP 182N0, QUIC 183N0, WebSocket 184N0
# and replica 185N0 (node 0: TCP 18100, HTTP 18200, ...). Root user:
# iggy / iggy unless IGGY_ROOT_USERNAME / IGGY_ROOT_PASSWORD are set.
# BIN=path/to/iggy-server uses that binary instead of building one;
# NODES=n runs a cluster of n nodes (1 to 3 here; default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
command=${1:-}
dir=${2:-target/cluster}
mapfile -t nodes < <(seq 0 $((${NODES:-3} - 1)))

port() { echo $((18000 + $1 * 100 + $2 * 10)); } # kind, node

roster() {
  local n
  for n in "${nodes[@]}"; do
    cat <<TOML
[[cluster.nodes]]
name = "node-$n"
ip = "127.0.0.1"
replica_id = $n

[cluster.nodes.ports]
tcp = $(port 1 "$n")
http = $(port 2 "$n")
quic = $(port 3 "$n")
websocket = $(port 4 "$n")
tcp_replica = $(port 5 "$n")

TOML
  done
}

start() {
  local bin=${BIN:-}
  if [[ -z $bin ]]; then
    cargo build --release --bin iggy-server >&2
    bin=target/release/iggy-server
  fi
  bin=$(realpath "$bin")
  for n in "${nodes[@]}"; do
    local home="$dir/node-$n"
    mkdir -p "$home"
    if [[ -f $home/pid ]] && kill -0 "$(cat "$home/pid")" 2>/dev/null; then
      echo "node $n already runs (pid $(cat "$home/pid"))"
      continue
    fi
    {
      echo "[cluster]"
      echo "enabled = true"
      echo "name = \"local-cluster\""
      echo
      roster
    } >"$home/config.toml"
    (
      cd "$home"
      IGGY_ROOT_USERNAME=${IGGY_ROOT_USERNAME:-iggy} \
      IGGY_ROOT_PASSWORD=${IGGY_ROOT_PASSWORD:-iggy} \
      IGGY_TCP_ADDRESS=127.0.0.1:$(port 1 "$n") \
      IGGY_HTTP_ADDRESS=127.0.0.1:$(port 2 "$n") \
      IGGY_QUIC_ADDRESS=127.0.0.1:$(port 3 "$n") \
      IGGY_WEBSOCKET_ADDRESS=127.0.0.1:$(port 4 "$n") \
      IGGY_CONFIG_PATH=config.toml \
        nohup "$bin" --replica-id "$n" >server.log 2>&1 &
      echo $! >pid
    )
    echo "node $n: pid $(cat "$home/pid"), tcp 127.0.0.1:$(port 1 "$n"), http 127.0.0.1:$(port 2 "$n"), log $home/server.log"
  done
}

stop() {
  for n in "${nodes[@]}"; do
    local pidfile="$dir/node-$n/pid"
    [[ -f $pidfile ]] || continue
    local pid
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
      echo "node $n stopped"
    fi
    rm -f "$pidfile"
  done
}

status() {
  for n in "${nodes[@]}"; do
    local pidfile="$dir/node-$n/pid"
    if [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "node $n: running (pid $(cat "$pidfile"))"
    else
      echo "node $n: stopped"
    fi
  done
}

# The metadata leader's node number: the node that serves a linearizable
# read (followers answer 307).
leader() {
  local n token code
  for n in "${nodes[@]}"; do
    token=$(curl -s -X POST "http://127.0.0.1:$(port 2 "$n")/users/login" \
      -H 'content-type: application/json' \
      -d "{\"username\":\"${IGGY_ROOT_USERNAME:-iggy}\",\"password\":\"${IGGY_ROOT_PASSWORD:-iggy}\"}" \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"]["token"])' 2>/dev/null) || continue
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "authorization: Bearer $token" \
      "http://127.0.0.1:$(port 2 "$n")/streams?consistency=linearizable")
    if [[ $code == 200 ]]; then
      echo "$n"
      return 0
    fi
  done
  echo "no leader yet" >&2
  return 1
}

case $command in
  start) start ;;
  stop) stop ;;
  status) status ;;
  leader) leader ;;
  *) sed -n '2,14p' "$0" >&2; exit 2 ;;
esac
