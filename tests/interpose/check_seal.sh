#!/usr/bin/env bash
# Checks that a built libgpuslack.so keeps the one-file promise
# (DESIGN.md, principle 3). Usage: check_seal.sh path/to/libgpuslack.so
# Prints each violation on one line and exits 1 if there is any.
set -u
so=$1
fail=0
bad() { echo "seal: $*"; fail=1; }

[ -f "$so" ] || { echo "seal: no such file: $so"; exit 2; }

# 1. Exports: only hooked CUDA/NCCL API symbols and gpuslack_*.
while read -r sym; do
  case "$sym" in
    cuda*|cu[A-Z]*|nccl*|pnccl*|gpuslack_*) ;;
    *) bad "exports $sym" ;;
  esac
done < <(nm -D --defined-only "$so" | awk '{print $3}' | sed 's/@.*//')

# 2. NEEDED: glibc's libraries only (libstdc++ and libgcc are static).
while read -r lib; do
  case "$lib" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux-x86-64.so.*) ;;
    *) bad "needs $lib" ;;
  esac
done < <(readelf -d "$so" | awk '/\(NEEDED\)/{gsub(/[\[\]]/, "", $5); print $5}')

# 3. No GNU_UNIQUE symbols: they would bind across copies of libstdc++.
nm -D "$so" | awk '$2=="u"{print $3}' | while read -r sym; do echo "seal: GNU_UNIQUE $sym"; done | grep . && fail=1

# 4. No static TLS: the library must load through dlopen after threads exist.
readelf -d "$so" | grep -E '\(FLAGS\)' | grep -q STATIC_TLS && bad "DF_STATIC_TLS is set"

[ $fail = 0 ] && echo "seal: $so is sealed"
exit $fail
