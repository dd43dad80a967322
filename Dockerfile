# iggy-server with the iggy CLI and iggy-bench.
#
#   docker build -t iggy .
#   docker run --rm \
#     -p 8090:8090 -p 8080:8080/udp -p 3000:3000 -p 8092:8092 \
#     -e IGGY_NODE_ADVERTISED_ADDRESS=localhost \
#     -e IGGY_ROOT_USERNAME=iggy -e IGGY_ROOT_PASSWORD=change-me \
#     -v iggy-data:/var/lib/iggy/data \
#     --ulimit memlock=-1 --security-opt seccomp=unconfined \
#     iggy
#
# Every listener binds 0.0.0.0, and a wildcard bind says nothing about
# where clients reach the server: without IGGY_NODE_ADVERTISED_ADDRESS the
# server refuses to start. Use the name clients dial (localhost for a single
# host with published ports). The seccomp and memlock options let io_uring
# run; without them the server falls back to epoll. See docker-compose.yml.

ARG RUST_VERSION=1.95
ARG DEBIAN_RELEASE=trixie

FROM rust:${RUST_VERSION}-slim-${DEBIAN_RELEASE} AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY crates ./crates
RUN cargo build --release --locked --workspace \
        --bin iggy-server --bin iggy --bin iggy-bench \
    && install -D -m 0755 -t /out \
        target/release/iggy-server target/release/iggy target/release/iggy-bench

FROM debian:${DEBIAN_RELEASE}-slim AS runtime
# A fixed, numeric, unprivileged identity, so volume ownership and
# Kubernetes' runAsNonRoot can rely on it.
RUN groupadd --system --gid 10001 iggy \
    && useradd --system --uid 10001 --gid iggy \
        --home-dir /var/lib/iggy --shell /usr/sbin/nologin iggy \
    && install -d -o iggy -g iggy -m 0750 /var/lib/iggy /var/lib/iggy/data
COPY --from=build /out/ /usr/local/bin/

# The data directory (system.path) is resolved against the working
# directory: /var/lib/iggy/data.
ENV IGGY_TCP_ADDRESS=0.0.0.0:8090 \
    IGGY_QUIC_ADDRESS=0.0.0.0:8080 \
    IGGY_HTTP_ADDRESS=0.0.0.0:3000 \
    IGGY_WEBSOCKET_ADDRESS=0.0.0.0:8092 \
    IGGY_SYSTEM_PATH=data

WORKDIR /var/lib/iggy
VOLUME ["/var/lib/iggy/data"]
# TCP (binary protocol), QUIC, HTTP (REST, web console, /metrics), WebSocket.
EXPOSE 8090/tcp 8080/udp 3000/tcp 8092/tcp
USER 10001:10001
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/iggy-server"]
