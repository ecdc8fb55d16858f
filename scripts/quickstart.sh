#!/usr/bin/env bash
# The README's first command: installs what is missing, builds gpuslack
# (Release, in ./build), and runs the demo workload natively, under gpuslack
# measuring only, and with gpuslack's fixes on: its last screen is the
# before/after comparison and the findings (scripts/demo-compare.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh >/dev/null
scripts/build.sh build
scripts/demo-compare.sh build
