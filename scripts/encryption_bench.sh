#!/usr/bin/env bash
# Encryption at rest on against off, one server binary, same session
# (issue 21): alternates the two settings run after run, each run on a fresh
# data directory with the page cache dropped first (needs root for that).
# Usage:
#   scripts/encryption_bench.sh [SERVER_BINARY] [ROUNDS]
# Uses target/release/iggy-bench (or $BENCH) and a scratch directory
# ($WORKDIR, default /tmp/iggy-enc). Prints one "total" line per run, then
# the CPU time the hypervisor stole from this machine during the run (in
# clock ticks, /proc/stat): a run with much steal was disturbed from outside;
# and the server's CPU seconds during the run (user + system), which the
# machine's noise moves less than throughput.
set -euo pipefail
root=$(dirname "$0")/..
server=${1:-$root/target/release/iggy-server}
rounds=${2:-3}
bench=${BENCH:-$root/target/release/iggy-bench}
workdir=${WORKDIR:-/tmp/iggy-enc}
address=127.0.0.1:18191
# Any 32 bytes; a benchmark key, never a real one.
key=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=
mkdir -p "$workdir"

stop() {
    if [ -f "$workdir/pid" ]; then
        kill "$(cat "$workdir/pid")" 2>/dev/null || true
        while kill -0 "$(cat "$workdir/pid")" 2>/dev/null; do sleep 0.1; done
        rm -f "$workdir/pid"
    fi
}
trap stop EXIT

start() {
    stop
    sync
    echo 3 > /proc/sys/vm/drop_caches || echo "cannot drop the page cache (not root?)" >&2
    rm -rf "$workdir/local_data"
    cp "$server" "$workdir/iggy-server"
    (
        cd "$workdir"
        IGGY_ROOT_USERNAME=iggy IGGY_ROOT_PASSWORD=iggy \
            IGGY_TCP_ADDRESS=$address IGGY_HTTP_ADDRESS=127.0.0.1:0 \
            IGGY_QUIC_ADDRESS=127.0.0.1:0 IGGY_WEBSOCKET_ADDRESS=127.0.0.1:0 \
            IGGY_SYSTEM_ENCRYPTION_ENABLED=$1 IGGY_SYSTEM_ENCRYPTION_KEY=$key \
            nohup ./iggy-server --fresh > server.log 2>&1 &
        echo $! > pid
    )
    sleep 1.5
}

steal() {
    awk '/^cpu /{print $9}' /proc/stat
}

# The server's CPU time so far (user + system), in clock ticks.
server_cpu() {
    awk '{print $14 + $15}' "/proc/$(cat "$workdir/pid")/stat"
}

run() {
    local before cpu_before
    before=$(steal)
    cpu_before=$(server_cpu)
    local line
    line=$("$bench" "$@" --server-address "$address" --username iggy --password iggy --quiet \
        | grep total)
    local ticks=$(($(server_cpu) - cpu_before))
    echo "$line steal $(($(steal) - before)) server_cpu_s $(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f", t / hz}')"
}

batch="--message-size 1000 --messages-per-batch 1000 --message-batches 1000"
for round in $(seq "$rounds"); do
    for encryption in false true; do
        start "$encryption"
        echo "round $round encryption=$encryption 2 producers: $(run pinned-producer --producers 2 $batch)"
        echo "round $round encryption=$encryption 2 consumers: $(run pinned-consumer --consumers 2 $batch)"
    done
done
