#!/usr/bin/env bash
# Checks that a built libgpuslack.so keeps the one-file promise
# (docs/design.md, principle 3) and runs nothing of its own at load (principle 4). Usage: check_seal.sh path/to/libgpuslack.so
# Prints each violation on one line and exits 1 if there is any.
set -u
so=$1
fail=0
bad() { echo "seal: $*"; fail=1; }

[ -f "$so" ] || { echo "seal: no such file: $so"; exit 2; }

# 1. Exports: only hooked CUDA/NCCL/CUPTI API symbols and gpuslack_*, and
#    dlsym: a driver function looked up on a handle of libcuda.so.1
#    is handed out hooked (interpose/dl_hooks.cc); nothing else of libc.
while read -r sym; do
  case "$sym" in
    cuda*|cu[A-Z]*|cupti*|nccl*|pnccl*|gpuslack_*|dlsym) ;;
    *) bad "exports $sym" ;;
  esac
done < <(nm -D --defined-only "$so" | awk '{print $3}' | sed 's/@.*//')

# 1b. Data exports: only NCCL's profiler plugin structs, one per version of
#     the interface (interpose/nccl_profiler_exports.cc), and all of them.
data=$(nm -D --defined-only "$so" | awk '$2 ~ /^[DdBbRrVv]$/ {print $3}' | sed 's/@.*//' | sort)
while read -r sym; do
  case "$sym" in
    ncclProfiler_v[1-6]) ;;
    "") ;;
    *) bad "exports data $sym" ;;
  esac
done <<< "$data"
for v in 1 2 3 4 5 6; do
  grep -qx "ncclProfiler_v$v" <<< "$data" || bad "does not export ncclProfiler_v$v (NCCL's profiler plugin)"
done

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

# 5. No constructors of our own (docs/design.md, principle 4: a preloaded library
#    does nothing until used). Allowed: the toolchain's frame_dummy and the
#    static libstdc++'s own initializers.
#    No .init_array at all (the wheel's zig-built library): nothing to run.
ctors=$(readelf -SW "$so" | grep -q '\.init_array' || exit 0; python3 - "$so" <<'PY'
import struct, subprocess, sys
so = sys.argv[1]
words = b""
for line in subprocess.check_output(["objdump", "-s", "-j", ".init_array", so], text=True).splitlines():
    if line.startswith(" "):
        for field in line.split()[1:5]:
            if len(field) == 8 and all(c in "0123456789abcdef" for c in field):
                words += bytes.fromhex(field)
addrs = [hex(struct.unpack("<Q", words[i:i + 8])[0]) for i in range(0, len(words) - 7, 8)]
if addrs:
    out = subprocess.check_output(["addr2line", "-f", "-e", so] + addrs, text=True).splitlines()
    print("\n".join(out[0::2]))
PY
) || bad "could not read the constructors (.init_array)"
while read -r fn; do
  case "$fn" in
    ""|frame_dummy) ;;
    _GLOBAL__sub_I_charconv*|_GLOBAL__sub_I_eh_alloc.cc|_GLOBAL__sub_I_*locale_inst.cc) ;;
    _GLOBAL__sub_I_system_error.cc|_GLOBAL__sub_I_cxx11_ios_failure.cc|_GLOBAL__sub_I_ios_init.cc) ;;
    *) bad "runs a constructor at load: $fn" ;;
  esac
done <<< "$ctors"

[ $fail = 0 ] && echo "seal: $so is sealed"
exit $fail
