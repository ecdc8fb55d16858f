#!/usr/bin/env bash
# Installs the pinned PyTorch that the torch tests run on the simulated device
# into a cached virtual environment outside the clone, and prints its Python
# on the last line:
#
#   ${GPUSLACK_TORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuslack-torch}/<key>/bin/python
#
# The wheel is PyPI's default build of torch (CUDA 13.2). Its nvidia-* wheels
# are the smallest set it loads with on the simulated device (3.3 GB in all
# with torch, instead of about 5 GB with all of them), installed without their
# dependencies at the versions torch pins:
#   - not nvidia-cuda-runtime, nvidia-nccl-cu13, nvidia-cublas nor
#     nvidia-cuda-cupti: the simulated libcudart.so.13, libnccl.so.2,
#     libcublas.so.13 / libcublasLt.so.13 and libcupti.so.13 stand in their
#     place (libtorch_cuda.so and libtorch_cpu.so have an RPATH into
#     site-packages/nvidia/*/lib, which LD_LIBRARY_PATH cannot override: a
#     real libcudart, libcublas or libcupti there would win over the
#     simulated one; the real cuBLAS cannot start on the simulated device,
#     and the real CUPTI would trace nothing of it);
#   - not nvidia-cusolver (libtorch_cuda_linalg.so is loaded on first use of
#     torch.linalg), nvidia-nvtx, triton, cuda-bindings, cuda-toolkit: `import
#     torch` and the allocator never load them.
# What stays is what libtorch_cpu/cuda/python.so name in DT_NEEDED (cudnn,
# nvrtc, cufft, cusparse with its nvjitlink, cusparseLt, cufile, nvshmem).
#
# `--path` prints where the Python is (or will be) without installing.
# Idempotent: prints only the path when the environment is there. On failure,
# one line on stderr says what failed (pip's output is in the log it names).
set -euo pipefail

TORCH_VERSION=2.15.0
# Bump when the set of packages changes, so the cache is rebuilt.
RECIPE=3
PACKAGES=(
  torch==$TORCH_VERSION
  # what torch's metadata requires, pure Python
  filelock==4.3.1 typing_extensions==4.16.0 sympy==1.14.0 mpmath==1.3.0 networkx==3.6.1
  jinja2==3.1.6 MarkupSafe==3.0.4 fsspec==2026.9.0 setuptools==84.2.1
  # the CUDA libraries torch's own libraries are linked against (see above)
  nvidia-cudnn-cu13==9.26.0.51
  nvidia-cuda-nvrtc==13.2.86 nvidia-cufft==12.2.0.57 nvidia-cusparse==12.7.10.12
  nvidia-nvjitlink==13.5.37 nvidia-cusparselt-cu13==0.8.1 nvidia-cufile==1.17.1.22
  nvidia-nvshmem-cu13==3.7.2
)

# The system's Python (Debian's python3 and python3-venv, scripts/deps.sh):
# the same on every machine of the project, unlike a pyenv in $PATH.
PYTHON=${GPUSLACK_TORCH_BASE_PYTHON:-/usr/bin/python3}
pyver=$("$PYTHON" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
CACHE=${GPUSLACK_TORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuslack-torch}
VENV=$CACHE/$TORCH_VERSION-$pyver-r$RECIPE

if [ "${1:-}" = --path ]; then
  echo "$VENV/bin/python"
  exit 0
fi
if [ -f "$VENV/.done" ]; then
  echo "$VENV/bin/python"
  exit 0
fi

fail() { printf 'torch-env: %s\n' "$*" >&2; exit 1; }

mkdir -p "$CACHE"
log=$CACHE/install-$TORCH_VERSION-$pyver-r$RECIPE.log
printf 'torch-env: installing torch %s (%s) into %s\n' "$TORCH_VERSION" "$pyver" "$VENV" >&2
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV" >"$log" 2>&1 || fail "python venv failed (is python3-venv installed?); see $log"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir --no-deps \
  "${PACKAGES[@]}" >>"$log" 2>&1 || fail "pip install of torch $TORCH_VERSION failed; see $log"
# (`import torch` is not tried here: it needs a libcudart.so.13, which only
# the simulated device provides; tests/python/torch_sim.py loads it there.)
touch "$VENV/.done"
rm -f "$log"
echo "$VENV/bin/python"
