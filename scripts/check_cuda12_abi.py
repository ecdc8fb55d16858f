#!/usr/bin/env python3
"""Compares the parameters of every hooked CUDA runtime symbol between two
cuda_runtime_api.h (CUDA 12.x and 13.x), so that a row of
interpose/hook_table.h or launch_hook_table.h whose ABI differs between the
two is known (hook_table.h, ABI note; issue 18).

    scripts/check_cuda12_abi.py CUDA12_INCLUDE_DIR [CUDA13_INCLUDE_DIR]

CUDA12_INCLUDE_DIR: for instance the include/ folder of PyPI's
nvidia-cuda-runtime-cu12 wheel (pip download nvidia-cuda-runtime-cu12
--no-deps; unzip); CUDA13_INCLUDE_DIR defaults to /usr/local/cuda/include.

Prints each differing symbol with both parameter lists, and exits 1 when the
set of differing symbols is not the one hook_table.h handles (KNOWN below),
or when a hooked symbol is missing from either header. A _ptsz/_ptds row is
compared through its base name (the headers declare the variants by macro).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLES = ["interpose/hook_table.h", "interpose/launch_hook_table.h"]
# Rows whose parameters differ, and that hook_table.h says how it handles.
KNOWN = {"cudaMemcpyBatchAsync"}


def hooked_symbols():
    names = []
    for table in TABLES:
        with open(os.path.join(ROOT, table)) as f:
            text = re.sub(r"//[^\n]*", "", f.read())
            for m in re.finditer(r"\bX\((\w+),", text):
                names.append(m.group(1))
    return names


def base_name(sym):
    return re.sub(r"_(ptsz|ptds)$", "", sym)


def declarations(include_dir):
    """name -> parameter types, from the first (public) declaration of each
    function in cuda_runtime_api.h; later ones (the header's internal
    section) declare older versions."""
    with open(os.path.join(include_dir, "cuda_runtime_api.h")) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    decls = {}
    for m in re.finditer(r"CUDARTAPI\s+(\w+)\s*\(([^;{]*?)\)\s*;", text, flags=re.S):
        decls.setdefault(m.group(1), normalize(m.group(2)))
    return decls


def split_top(params):
    out, depth, cur = [], 0, ""
    for c in params:
        if c == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += c == "("
        depth -= c == ")"
        cur += c
    out.append(cur)
    return out


def normalize(params):
    params = re.sub(r"__dv\([^)]*\)", "", params)
    types = []
    for p in split_top(params):
        tokens = [t for t in re.findall(r"\w+|\*|&|\[|\]", p) if t not in ("struct", "enum")]
        if not tokens or tokens == ["void"]:
            continue
        if len(tokens) > 1 and re.match(r"\w+$", tokens[-1]) and tokens[-2] not in ("unsigned", "signed", "long"):
            tokens = tokens[:-1]  # the parameter's name
        types.append(" ".join(tokens))
    return tuple(types)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    old = declarations(argv[1])
    new = declarations(argv[2] if len(argv) > 2 else "/usr/local/cuda/include")
    differ, missing, unchecked, compared = set(), [], [], set()
    for sym in hooked_symbols():
        name = base_name(sym)
        if name in compared:
            continue
        compared.add(name)
        if name.startswith("__"):
            unchecked.append(name)
            continue
        if name not in old or name not in new:
            missing.append(name)
            continue
        if old[name] != new[name]:
            differ.add(name)
            print(f"{name}:\n  12: ({', '.join(old[name])})\n  13: ({', '.join(new[name])})")
    print(f"{len(compared) - len(unchecked)} hooked symbols compared; differ: {sorted(differ) or 'none'}; "
          f"not compared: {unchecked or 'none'}")
    ok = True
    if missing:
        print(f"declared in only one header (or neither): {missing}")
        ok = False
    if differ != KNOWN:
        print(f"hook_table.h handles {sorted(KNOWN)}; the headers differ in {sorted(differ)}: update both")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
