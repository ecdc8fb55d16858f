#!/usr/bin/env bash
# Regenerates the README's "Quick start" screen: runs scripts/demo-compare.sh
# on the build folder $1 (default ./build; further arguments go to the demo)
# and prints the Markdown to paste there: when and where it was measured
# (date, device, load average before and after, cores), then the screen as
# a fenced block.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
load_before=$(cut -d' ' -f1 /proc/loadavg)
screen=$(scripts/demo-compare.sh "$@")
load_after=$(cut -d' ' -f1 /proc/loadavg)
device=$(printf '%s\n' "$screen" | sed -n 's/^demo-compare: //p' | tail -n 1 | sed -E 's/ \([^()]*\)$//')
echo "Measured $(date -u '+%Y-%m-%d %H:%M') UTC with \`scripts/demo-compare.sh $dir\` ($device;"
echo "load average $load_before before, $load_after after, on $(nproc) cores):"
echo
echo '```'
printf '%s\n' "$screen"
echo '```'
