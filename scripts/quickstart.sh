#!/usr/bin/env bash
# The README's first command: installs what is missing, builds gpuslack
# (Release, in ./build) and runs the demo workload.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh >/dev/null
scripts/build.sh build
scripts/demo.sh build
