#!/usr/bin/env bash
# Installs what the test suite needs outside cargo: a headless Chromium and
# its WebDriver (Debian's `chromium` and `chromium-driver`) for the web
# console's browser test. Idempotent: quick when both are already present.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends chromium chromium-driver fonts-dejavu-core
