#!/usr/bin/env bash
# The README's second command, and what CI runs: the whole test suite.
#   1. Release build (./build): every test (ctest).
#   2. ASan + UBSan build (./build-asan): every test.
#   3. TSan build (./build-tsan): every test.
# Exits non-zero if any test fails. GPUSLACK_TEST_QUICK=1 runs step 1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh >/dev/null
# The pinned torch of the torch tests (ctest -L torch, Release build only).
scripts/torch-env.sh >/dev/null
jobs=$(nproc)

echo "== Release build: all tests"
scripts/build.sh build
(cd build && ctest -j "$jobs" --output-on-failure --timeout 300)

if [ "${GPUSLACK_TEST_QUICK:-0}" = 1 ]; then exit 0; fi

echo "== ASan+UBSan build: all tests"
scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DGPUSLACK_SANITIZE=address -DGPUSLACK_BUILD_BENCH=OFF
(cd build-asan && ctest -j "$jobs" --output-on-failure --timeout 300)

echo "== TSan build: all tests"
scripts/build.sh build-tsan -DCMAKE_BUILD_TYPE=Debug -DGPUSLACK_SANITIZE=thread -DGPUSLACK_BUILD_BENCH=OFF
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest -j "$jobs" --output-on-failure --timeout 300)
