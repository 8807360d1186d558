#!/usr/bin/env bash
# Checks the Dockerfile without a Docker engine: replays the builder stage's install in a fresh
# venv (pip may reuse its cache) and runs the installed `henge` as the final image would
# (--help, migrate on a temporary SQLite registry, ENTRYPOINT + CMD until /readyz answers).
# The same checks run in the normal test suite (tests/helm/test_dockerfile.py).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/pytest tests/helm/test_dockerfile.py -q -p no:cacheprovider "$@"
