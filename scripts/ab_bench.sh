#!/usr/bin/env bash
# Alternates two server builds run after run on issue #7's workloads, each
# run on a fresh data directory with the page cache dropped first (needs
# root for that). Usage:
#   scripts/ab_bench.sh OLD_SERVER_BINARY NEW_SERVER_BINARY [ROUNDS]
# Uses target/release/iggy-bench (or $BENCH) and a scratch directory
# ($WORKDIR, default /tmp/iggy-ab). Prints one line per run.
set -euo pipefail
old=$1
new=$2
rounds=${3:-3}
bench=${BENCH:-$(dirname "$0")/../target/release/iggy-bench}
workdir=${WORKDIR:-/tmp/iggy-ab}
address=127.0.0.1:18190
mkdir -p "$workdir"

stop() {
    if [ -f "$workdir/pid" ]; then
        kill "$(cat "$workdir/pid")" 2>/dev/null || true
        while kill -0 "$(cat "$workdir/pid")" 2>/dev/null; do sleep 0.1; done
        rm -f "$workdir/pid"
    fi
}

start() {
    stop
    sync
    echo 3 > /proc/sys/vm/drop_caches || echo "cannot drop the page cache (not root?)" >&2
    rm -rf "$workdir/local_data"
    cp "$1" "$workdir/iggy-server"
    (
        cd "$workdir"
        IGGY_ROOT_USERNAME=iggy IGGY_ROOT_PASSWORD=iggy \
            IGGY_TCP_ADDRESS=$address IGGY_HTTP_ADDRESS=127.0.0.1:0 \
            IGGY_QUIC_ADDRESS=127.0.0.1:0 IGGY_WEBSOCKET_ADDRESS=127.0.0.1:0 \
            nohup ./iggy-server --fresh > server.log 2>&1 &
        echo $! > pid
    )
    sleep 1.5
}

run() {
    "$bench" "$@" --server-address "$address" --username iggy --password iggy --quiet \
        | grep total
}

batch="--message-size 1000 --messages-per-batch 1000 --message-batches 1000"
for round in $(seq "$rounds"); do
    for side in old new; do
        binary=$old
        [ "$side" = new ] && binary=$new
        start "$binary"
        echo "round $round $side 2 producers:  $(run pinned-producer --producers 2 $batch)"
        echo "round $round $side 2 consumers:  $(run pinned-consumer --consumers 2 $batch)"
        start "$binary"
        echo "round $round $side 2 fsync:      $(run pinned-producer --producers 2 $batch --fsync)"
        start "$binary"
        echo "round $round $side 1 message:    $(run pinned-producer --producers 1 --message-size 1000 --messages-per-batch 1 --message-batches 20000)"
        start "$binary"
        echo "round $round $side 100 messages: $(run pinned-producer --producers 1 --message-size 1000 --messages-per-batch 100 --message-batches 5000)"
    done
done
stop
