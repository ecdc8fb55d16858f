#!/usr/bin/env bash
# Installs what gpuslack needs to build, and builds the two dependencies that
# Debian does not ship in a usable form, into a cache outside the clone.
#
#   - Debian packages: compilers (GCC; clang for the fuzz target), CMake, Ninja,
#     GoogleTest, Google Benchmark, pytest with setuptools and wheel (the
#     Python package's tests, tests/python), python3-venv (scripts/torch-env.sh),
#     spdlog and fmt (header-only use), binutils (the export test), util-linux
#     (setpriv, for the setuid test), dpkg-dev, prometheus-node-exporter and
#     prometheus (promtool: the live metrics' end-to-end test, Release)
#     (apt-get source). Installed only when missing, so a warm machine never
#     touches the network.
#   - abseil-cpp and jemalloc, from their Debian source packages: Debian's
#     static abseil is not position-independent, and its jemalloc is
#     unprefixed with initial-exec TLS. Both are rebuilt here to be sealed
#     inside libgpuslack.so (see docs/dependencies.md).
#   - the CUPTI 13.2 headers, from PyPI's nvidia-cuda-cupti wheel (pip
#     download): the toolkit here is 13.0, whose CUPTI lacks
#     cuptiSubscribe_v2 with allowMultipleSubscribers and the per-subscriber
#     (_v2) activity calls. Headers only; nothing of the wheel is linked.
#   - the CUDA 12.9 runtime's headers, from PyPI's nvidia-cuda-runtime-cu12
#     wheel: the check of the hooked rows against CUDA 12's ABI. Headers only.
#
# Prints the cache prefix on its last line. Idempotent; safe to re-run.
set -euo pipefail

# abseil's and jemalloc's versions, and how they are fetched and jemalloc
# built (shared with scripts/wheel.sh).
source "$(dirname "${BASH_SOURCE[0]}")/dep_sources.sh"
# The CUPTI that torch's pinned wheel pins (keep equal to
# GPUSLACK_CUPTI_HEADERS_VERSION in cmake/dependencies.cmake).
CUPTI_HEADERS_VERSION=13.2.86
# The CUDA 12 runtime whose ABI the hooks also serve (keep equal to
# GPUSLACK_CUDART12_HEADERS_VERSION in cmake/dependencies.cmake).
CUDART12_HEADERS_VERSION=12.9.79
# NVML's header (nvml.h: the toolkit here has none), for the device health
# sampler that loads libnvidia-ml at run time (keep equal to
# GPUSLACK_NVML_HEADERS_VERSION in cmake/dependencies.cmake).
NVML_HEADERS_VERSION=13.0.87
# Bump when the way a dependency is built changes, so its cache is rebuilt
# (keep equal to GPUSLACK_*_RECIPE in cmake/dependencies.cmake).
ABSEIL_RECIPE=1
JEMALLOC_RECIPE=2

CACHE=${GPUSLACK_DEPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuslack-deps}
JOBS=$(nproc 2>/dev/null || echo 2)
log() { printf 'deps: %s\n' "$*" >&2; }

sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# --- Debian packages -------------------------------------------------------
PACKAGES=(g++ make cmake ninja-build pkg-config binutils dpkg-dev bzip2 xz-utils util-linux
          libgtest-dev libgmock-dev libbenchmark-dev libspdlog-dev libfmt-dev
          python3 python3-venv python3-jsonschema python3-pytest python3-setuptools python3-wheel
          clang libclang-rt-14-dev
          prometheus-node-exporter prometheus)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# debootstrap: the older-distribution root of the wheel's test (tests/wheel, Release).
dpkg-query -W -f='${Status}' debootstrap 2>/dev/null | grep -q 'install ok installed' || missing+=(debootstrap)
# chromium: the job report's HTML, opened headless by tests/job/html_test.py (Release).
dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q 'install ok installed' || missing+=(chromium)
# slurm-wlm (slurmctld, slurmd, sbatch/srun, munge): the one-node Slurm
# cluster that tests/deploy/slurm_test.py starts and stops itself (Release).
dpkg-query -W -f='${Status}' slurm-wlm 2>/dev/null | grep -q 'install ok installed' || missing+=(slurm-wlm)

need_sources=0
[ -f "$CACHE/abseil-$ABSEIL_VERSION-r$ABSEIL_RECIPE/.done" ] || need_sources=1
[ -f "$CACHE/jemalloc-$JEMALLOC_VERSION-r$JEMALLOC_RECIPE/.done" ] || need_sources=1

apt_updated=0
apt_update() {
  [ $apt_updated = 1 ] && return
  sudo_if_needed apt-get update -q >&2
  apt_updated=1
}

if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  apt_update
  DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi

if [ $need_sources = 1 ]; then
  # apt-get source needs deb-src entries: derive them from the configured
  # deb entries (deb822 and one-line formats), never naming a host here.
  if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    log "adding deb-src entries derived from the configured apt sources"
    tmp=$(mktemp)
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] && sed 's/^Types: deb$/Types: deb-src/' "$f"
      echo
    done > "$tmp"
    if [ -f /etc/apt/sources.list ]; then
      grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' > "$tmp.list" || true
      sudo_if_needed cp "$tmp.list" /etc/apt/sources.list.d/gpuslack-deb-src.list
    fi
    sudo_if_needed cp "$tmp" /etc/apt/sources.list.d/gpuslack-deb-src.sources
    rm -f "$tmp" "$tmp.list"
    apt_updated=0
  fi
  apt_update
fi

mkdir -p "$CACHE"

# --- abseil: PIC, hidden visibility, private inline namespace -------------
build_abseil() {
  local dir=$1
  [ -f "$dir/.done" ] && return
  log "building abseil $ABSEIL_VERSION into $dir"
  rm -rf "$dir"; mkdir -p "$dir"
  fetch_source abseil "$ABSEIL_VERSION" "$dir/src"
  # The renamed namespace is what lets this abseil live beside another
  # abseil (TensorFlow's, a Python extension's) in the same process.
  sed -i 's/^#define ABSL_OPTION_INLINE_NAMESPACE_NAME .*/#define ABSL_OPTION_INLINE_NAMESPACE_NAME gpuslack_lts_20220623/' \
    "$dir/src/absl/base/options.h"
  cmake -S "$dir/src" -B "$dir/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$dir/install" \
    -DCMAKE_CXX_STANDARD=17 -DABSL_PROPAGATE_CXX_STD=ON \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DCMAKE_CXX_VISIBILITY_PRESET=hidden -DCMAKE_VISIBILITY_INLINES_HIDDEN=ON \
    -DBUILD_TESTING=OFF -DABSL_BUILD_TESTING=OFF >&2
  cmake --build "$dir/build" -j "$JOBS" >&2
  cmake --install "$dir/build" >&2
  rm -rf "$dir/build" "$dir/src"
  touch "$dir/.done"
}
build_abseil "$CACHE/abseil-$ABSEIL_VERSION-r$ABSEIL_RECIPE"

# --- jemalloc: prefixed, private, no initial-exec TLS (dep_sources.sh) ------
JE_DIR=$CACHE/jemalloc-$JEMALLOC_VERSION-r$JEMALLOC_RECIPE
[ -f "$JE_DIR/.done" ] || log "building jemalloc $JEMALLOC_VERSION into $JE_DIR"
build_jemalloc "$JE_DIR"

# --- Headers from PyPI wheels: their include folder only ------------------
# fetch_wheel_headers PACKAGE VERSION WHEEL_INCLUDE CHECK_FILE DEST: pip
# downloads PACKAGE==VERSION (no dependencies), and its WHEEL_INCLUDE folder
# (which must hold CHECK_FILE) becomes DEST/include, with its License.txt.
fetch_wheel_headers() {
  local package=$1 version=$2 wheel_include=$3 check=$4 dest=$5 work pip why wheel
  [ -f "$dest/.done" ] && return
  log "fetching the $package $version headers into $dest"
  work=$(mktemp -d "$CACHE/wheel.XXXXXX")
  # pip where Python has it; otherwise the one a fresh venv brings (python3-venv).
  pip=(python3 -m pip)
  if ! python3 -m pip --version >/dev/null 2>&1; then
    python3 -m venv "$work/venv" >&2 && pip=("$work/venv/bin/python" -m pip)
  fi
  if ! "${pip[@]}" download -q --no-deps --only-binary=:all: --dest "$work" \
         "$package==$version" >"$work/pip.log" 2>&1; then
    why=$(grep -v '^\s*$' "$work/pip.log" | tail -n 1)
    rm -rf "$work"
    log "could not download $package==$version (pip download, needs the network once): ${why:-pip failed}"
    exit 1
  fi
  wheel=$(find "$work" -maxdepth 1 -name '*.whl' | head -n 1)
  python3 -m zipfile -e "$wheel" "$work/wheel"
  [ -f "$work/wheel/$wheel_include/$check" ] \
    || { rm -rf "$work"; log "the $package wheel has no $wheel_include/$check"; exit 1; }
  rm -rf "$dest"; mkdir -p "$dest"
  mv "$work/wheel/$wheel_include" "$dest/include"
  find "$work/wheel" -path '*dist-info*' -name 'License.txt' -exec cp {} "$dest/" \;
  rm -rf "$work"
  touch "$dest/.done"
}

fetch_wheel_headers nvidia-cuda-cupti "$CUPTI_HEADERS_VERSION" nvidia/cu13/include cupti_callbacks.h \
  "$CACHE/cupti-headers-$CUPTI_HEADERS_VERSION"
# The CUDA 12.9 runtime's headers, for the check that every hooked row has
# the same signature in CUDA 12 as in 13 but where the hooks handle both
# (scripts/check_cuda12_abi.py, ctest cuda12.hooked_rows_abi).
fetch_wheel_headers nvidia-cuda-runtime-cu12 "$CUDART12_HEADERS_VERSION" nvidia/cuda_runtime/include \
  cuda_runtime_api.h "$CACHE/cudart12-headers-$CUDART12_HEADERS_VERSION"
# NVML's header (nvml.h), from the nvidia-nvml-dev wheel: headers only, NVML
# is loaded at run time (lib/cuda/nvml_api.h).
fetch_wheel_headers nvidia-nvml-dev "$NVML_HEADERS_VERSION" nvidia/cu13/include nvml.h \
  "$CACHE/nvml-headers-$NVML_HEADERS_VERSION"

# --- kubernetes-validate (PyPI), in a venv of its own ----------------------
# The Kubernetes API's JSON schemas ship inside the package: tests/deploy/
# kubernetes_test.py checks docs/deploy.md's manifests with it offline
# (Release). Pinned with what it pulls in; Debian's python3-jsonschema is
# older than it needs.
KUBERNETES_VALIDATE_VERSION=1.37.0  # keep equal to tests/deploy/CMakeLists.txt
KV_DIR=$CACHE/kubernetes-validate-$KUBERNETES_VALIDATE_VERSION
if [ ! -f "$KV_DIR/.done" ]; then
  log "installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION into $KV_DIR"
  rm -rf "$KV_DIR"
  /usr/bin/python3 -m venv "$KV_DIR" >&2
  if ! "$KV_DIR/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: \
         "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" jsonschema==4.26.0 jsonschema-specifications==2025.9.1 \
         referencing==0.37.0 rpds-py==2026.9.1 attrs==26.1.0 PyYAML==6.0.4 packaging==26.4 \
         importlib_resources==7.1.0 typing_extensions==4.16.0 >"$KV_DIR.log" 2>&1; then
    log "could not install kubernetes-validate (pip, needs the network once): see $KV_DIR.log"
    rm -rf "$KV_DIR"
    exit 1
  fi
  rm -f "$KV_DIR.log"
  touch "$KV_DIR/.done"
fi

echo "$CACHE"
