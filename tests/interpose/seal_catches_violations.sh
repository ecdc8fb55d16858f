#!/usr/bin/env bash
# The seal checker's negative control: on a library that breaks each rule
# (programs/unsealed_lib.cc) it must fail and name every violation.
set -u
out=$(bash "$(dirname "$0")/check_seal.sh" "$1")
rc=$?
echo "$out"
[ $rc = 1 ] || { echo "check_seal.sh exited $rc, expected 1"; exit 1; }
for want in "exports not_allowed_export" "needs libstdc++" "runs a constructor at load" \
            "exports data nccl_not_a_profiler" "does not export ncclProfiler_v6"; do
  grep -q "$want" <<<"$out" || { echo "check_seal.sh did not report: $want"; exit 1; }
done
echo "seal check catches every violation"
