#!/usr/bin/env bash
# Alternates two server builds run after run on issue #7's workloads, each
# run on a fresh data directory with the page cache dropped first (needs
# root for that). Usage:
#   scripts/ab_bench.sh OLD_SERVER_BINARY NEW_SERVER_BINARY [ROUNDS]
#   scripts/ab_bench.sh --reference OUR_SERVER_BINARY REFERENCE_BINARY [ROUNDS]
# With --reference (or REF_SERVER=1 in the environment) the second binary is
# the reference server (Apache Iggy's `iggy-server`, built outside this tree,
# see docs/benchmarks.md) and the lines are labelled `ours` / `ref` instead of
# `old` / `new`. The reference reads its configuration differently: it runs
# on the defaults embedded in it (or on the file named by $REF_CONFIG, passed
# as its IGGY_CONFIG_PATH), with IGGY_TCP_ADDRESS set to the bench address,
# IGGY_SYSTEM_PATH to the scratch data directory, its HTTP API on
# 127.0.0.1:18191 and its QUIC and WebSocket listeners off.
# The reference refuses the CreateTopic that iggy-bench (SDK 0.11.0) sends
# when its option catalog predates the `durability` keys ("Unsupported option
# key: consumer_offset_durability"), so in this mode the script creates the
# reference's streams and topics through its HTTP API (`enforce_fsync` for
# the fsync run) and runs iggy-bench with --reuse-streams against BOTH
# servers (ours creates what is missing itself): producers write into the
# streams and the consumer run right after reads what they wrote, unseeded.
# Both servers are started with --fresh and root credentials iggy/iggy, and
# each run waits until the TCP port accepts connections.
# Uses target/release/iggy-bench (or $BENCH) and a scratch directory
# ($WORKDIR, default /tmp/iggy-ab). $BATCHES (default 1000) sets the 1 MB
# batches per actor of the main workloads; the one-message and 100-message
# workloads scale with it (20 x and 5 x BATCHES batches). A smaller value is
# only for a quick check that both servers start: compare figures only at
# the default; BATCHES=5000 makes the pair workload the 10 GB sustained run.
# $RATE (for example 300MB/s) caps each producer's rate (iggy-bench
# --rate-limit) in the pair, fsync and 100-message workloads, so both
# servers are offered the same load and their latencies compare. TLS=1 turns
# on TLS on both servers' TCP listeners (their ephemeral self-signed
# certificates) and runs iggy-bench with --tls --tls-no-verify.
# TRANSPORT=websocket runs iggy-bench over WebSocket (both servers listen on
# 127.0.0.1:18192; with TLS=1, WebSocket over TLS) instead of TCP, and
# TRANSPORT=quic over QUIC (127.0.0.1:18193), TRANSPORT=http over the HTTP
# API (both servers on 127.0.0.1:18191, plain HTTP).
# Prints one line per run: iggy-bench's `total` line, then the
# server's CPU seconds during the run and per GB of message data moved
# (outside --reference mode the consumer run seeds its own streams first,
# so its CPU includes that produce).
set -euo pipefail
reference=${REF_SERVER:-0}
if [ "${1:-}" = --reference ]; then
    reference=1
    shift
fi
if [ $# -lt 2 ]; then
    sed -n '2,33p' "$0" >&2
    exit 2
fi
old=$1
new=$2
rounds=${3:-3}
batches=${BATCHES:-1000}
bench=${BENCH:-$(dirname "$0")/../target/release/iggy-bench}
workdir=${WORKDIR:-/tmp/iggy-ab}
address=127.0.0.1:18190
ref_http=127.0.0.1:18191
labels="old new"
reuse=""
if [ "$reference" = 1 ]; then
    labels="ours ref"
    reuse=--reuse-streams
fi
mkdir -p "$workdir"
# iggy-bench's connection flags, and whether the listener it uses is TLS.
client_flags=""
tls_env=false
if [ "${TLS:-0}" = 1 ]; then
    client_flags="--tls --tls-no-verify"
    tls_env=true
fi
# Where iggy-bench connects, and the TLS switches of the listener it uses.
bench_address=$address
tcp_tls=$tls_env
ws_enabled=false
ws_address=127.0.0.1:0
ws_tls=false
quic_enabled=false
quic_address=127.0.0.1:0
our_http=127.0.0.1:0
case "${TRANSPORT:-tcp}" in
    tcp) ;;
    quic)
        quic_enabled=true
        quic_address=127.0.0.1:18193
        bench_address=$quic_address
        tcp_tls=false
        client_flags="--transport quic"
        ;;
    http)
        our_http=$ref_http
        bench_address=http://$ref_http
        tcp_tls=false
        client_flags="--transport http"
        ;;
    websocket)
        ws_enabled=true
        ws_address=127.0.0.1:18192
        bench_address=$ws_address
        tcp_tls=false
        ws_tls=$tls_env
        client_flags="--transport websocket $client_flags"
        ;;
    *)
        echo "TRANSPORT must be tcp, websocket, quic or http" >&2
        exit 2
        ;;
esac

stop() {
    if [ -f "$workdir/pid" ]; then
        kill "$(cat "$workdir/pid")" 2>/dev/null || true
        while kill -0 "$(cat "$workdir/pid")" 2>/dev/null; do sleep 0.1; done
        rm -f "$workdir/pid"
    fi
}
trap stop EXIT

# Waits until the server is ready (60 s at most) and stops the script if
# it exits first: ours once it has written its runtime dump (its port is
# bound, and accepts connections, before it serves them), the reference
# once its TCP port accepts connections.
wait_ready() {
    local pid host=${address%:*} port=${address##*:}
    pid=$(cat "$workdir/pid")
    for _ in $(seq 600); do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "the server exited at start; last lines of $workdir/server.log:" >&2
            tail -n 20 "$workdir/server.log" >&2
            rm -f "$workdir/pid"
            exit 1
        fi
        if [ "$1" = 1 ] || [ -f "$workdir/local_data/runtime/current_config.toml" ]; then
            if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
                return 0
            fi
        fi
        sleep 0.1
    done
    echo "the server does not listen on $address after 60 s; see $workdir/server.log" >&2
    exit 1
}

# start BINARY IS_REFERENCE
start() {
    stop
    sync
    echo 3 > /proc/sys/vm/drop_caches || echo "cannot drop the page cache (not root?)" >&2
    rm -rf "$workdir/local_data"
    if [ "$2" = 1 ]; then
        cp "$1" "$workdir/iggy-ref-server"
        (
            cd "$workdir"
            if [ -n "${REF_CONFIG:-}" ]; then
                export IGGY_CONFIG_PATH=$REF_CONFIG
            fi
            IGGY_ROOT_USERNAME=iggy IGGY_ROOT_PASSWORD=iggy IGGY_TCP_TLS_ENABLED=$tcp_tls \
                IGGY_TCP_ADDRESS=$address IGGY_SYSTEM_PATH="$workdir/local_data" \
                IGGY_HTTP_ENABLED=true IGGY_HTTP_ADDRESS=$ref_http \
                IGGY_QUIC_ENABLED=$quic_enabled IGGY_QUIC_ADDRESS=$quic_address \
                IGGY_WEBSOCKET_ENABLED=$ws_enabled \
                IGGY_WEBSOCKET_ADDRESS=$ws_address IGGY_WEBSOCKET_TLS_ENABLED=$ws_tls \
                nohup ./iggy-ref-server --fresh > server.log 2>&1 &
            echo $! > pid
        )
    else
        cp "$1" "$workdir/iggy-server"
        (
            cd "$workdir"
            IGGY_ROOT_USERNAME=iggy IGGY_ROOT_PASSWORD=iggy IGGY_TCP_TLS_ENABLED=$tcp_tls \
                IGGY_TCP_ADDRESS=$address IGGY_HTTP_ADDRESS=$our_http \
                IGGY_QUIC_ADDRESS=$quic_address IGGY_WEBSOCKET_ADDRESS=$ws_address \
                IGGY_WEBSOCKET_TLS_ENABLED=$ws_tls \
                nohup ./iggy-server --fresh > server.log 2>&1 &
            echo $! > pid
        )
    fi
    wait_ready "$2"
    sleep 1
}

# ref_streams COUNT ENFORCE_FSYNC: creates bench-1..bench-COUNT, each with
# the one-partition topic `bench-topic`, on the reference through its HTTP
# API (see the header for why not through iggy-bench).
ref_streams() {
    local token="" n
    for _ in $(seq 100); do
        token=$(curl -sf -X POST -H 'Content-Type: application/json' \
            -d '{"username":"iggy","password":"iggy"}' "http://$ref_http/users/login" \
            | sed -n 's/.*"token":"\([^"]*\)".*/\1/p') || true
        [ -n "$token" ] && break
        sleep 0.1
    done
    if [ -z "$token" ]; then
        echo "cannot log in to the reference's HTTP API at $ref_http" >&2
        exit 1
    fi
    for n in $(seq "$1"); do
        curl -sf -o /dev/null -X POST -H "Authorization: Bearer $token" \
            -H 'Content-Type: application/json' -d "{\"name\":\"bench-$n\"}" \
            "http://$ref_http/streams" \
            || { echo "the reference refused stream bench-$n" >&2; exit 1; }
        curl -sf -o /dev/null -X POST -H "Authorization: Bearer $token" \
            -H 'Content-Type: application/json' \
            -d "{\"name\":\"bench-topic\",\"partitions_count\":1,\"compression_algorithm\":\"none\",\"max_topic_size\":0,\"message_expiry\":0,\"options\":{\"enforce_fsync\":\"$2\"}}" \
            "http://$ref_http/streams/bench-$n/topics" \
            || { echo "the reference refused topic bench-$n/bench-topic" >&2; exit 1; }
    done
}

# fresh BINARY IS_REFERENCE STREAMS ENFORCE_FSYNC: a fresh server, with the
# streams made beforehand on the reference.
fresh() {
    start "$1" "$2"
    if [ "$2" = 1 ]; then
        ref_streams "$3" "$4"
    fi
}

# The server's CPU time so far (user + system), in clock ticks.
server_ticks() {
    awk '{print $14 + $15}' "/proc/$(cat "$workdir/pid")/stat"
}

# run GB ARGS...: prints the bench's `total` line, or FAILED with its last
# line (the whole output stays in $workdir/bench.log), then the server's CPU
# seconds during the run and per GB of message data moved (GB: what the
# workload moves, 1 GB = 10^9 bytes).
run() {
    local gb=$1 before after
    shift
    before=$(server_ticks)
    if "$bench" "$@" $reuse $client_flags --server-address "$bench_address" --username iggy --password iggy \
        --quiet > "$workdir/bench.log" 2>&1 && grep -q total "$workdir/bench.log"; then
        after=$(server_ticks)
        echo "$(grep total "$workdir/bench.log") | $(awk -v t=$((after - before)) \
            -v hz="$(getconf CLK_TCK)" -v gb="$gb" \
            'BEGIN {printf "server cpu %.2f s, %.2f s/GB", t / hz, t / hz / gb}')"
    else
        echo "FAILED: $(tail -n 1 "$workdir/bench.log")"
    fi
}

batch="--message-size 1000 --messages-per-batch 1000 --message-batches $batches"
rate=""
if [ -n "${RATE:-}" ]; then
    rate="--rate-limit $RATE"
fi
# GB of message data each workload moves.
gb_pair=$(awk -v b="$batches" 'BEGIN {print 2 * b / 1000}')
gb_single=$(awk -v b="$batches" 'BEGIN {print 20 * b / 1000000}')
gb_hundred=$(awk -v b="$batches" 'BEGIN {print 5 * b / 10000}')
gb_shared=$(awk -v b="$batches" 'BEGIN {print 8 * 10 * b / 100000}')
# $WORKLOADS (default: all) picks workloads by name: pair (2 producers,
# then 2 consumers), fsync, single (1 message per batch), hundred, shared
# (8 producers sending 10-message batches to one partition).
want() {
    [ -z "${WORKLOADS:-}" ] || [[ " $WORKLOADS " == *" $1 "* ]]
}
# line LABEL GB ARGS...: one run, printed as `round N SIDE LABEL <result>`.
line() {
    local label=$1
    shift
    echo "round $round $side $label $(run "$@")"
}
for round in $(seq "$rounds"); do
    for side in $labels; do
        binary=$old
        is_ref=0
        if [ "$side" = new ] || [ "$side" = ref ]; then
            binary=$new
            [ "$side" = ref ] && is_ref=1
        fi
        if want pair; then
            fresh "$binary" $is_ref 2 false
            line "2 producers: " "$gb_pair" pinned-producer --producers 2 $batch $rate
            line "2 consumers: " "$gb_pair" pinned-consumer --consumers 2 $batch
        fi
        if want fsync; then
            fresh "$binary" $is_ref 2 true
            line "2 fsync:     " "$gb_pair" pinned-producer --producers 2 $batch --fsync $rate
        fi
        if want single; then
            fresh "$binary" $is_ref 1 false
            line "1 message:   " "$gb_single" pinned-producer --producers 1 --message-size 1000 \
                --messages-per-batch 1 --message-batches $((20 * batches))
        fi
        if want shared; then
            fresh "$binary" $is_ref 1 false
            line "8 on 1:      " "$gb_shared" balanced-producer --producers 8 --streams 1 \
                --partitions 1 --message-size 1000 --messages-per-batch 10 \
                --message-batches $((10 * batches)) $rate
        fi
        if want hundred; then
            fresh "$binary" $is_ref 1 false
            line "100 messages:" "$gb_hundred" pinned-producer --producers 1 --message-size 1000 \
                --messages-per-batch 100 --message-batches $((5 * batches)) $rate
        fi
    done
done
