#!/usr/bin/python3
"""The include graph against the table of rooms in docs/design.md.

docs/design.md holds, in a ```rooms fenced block, every room of the source
tree: its name, its layer, the files it holds and the rooms it may include.
This script is the only reader of that table, so the map a newcomer reads is
the map the build is held to:

  check_includes.py [--root DIR]   every #include "..." in lib/, interpose/
                                   and include/ (.h, .cc, .inc, ...), mapped
                                   to rooms; one line per violation, exit 1
  check_includes.py --self-test    proves the check can fail: a synthetic
                                   tree with an upward include, a sideways
                                   one between features, a cycle and a file
                                   in no room, each of which must be reported

An include is resolved as the compiler resolves a quoted include here: the
including file's own directory first, then lib/ and include/ (the core's
include directories, lib/CMakeLists.txt). One that resolves to no file of
the tree (absl/..., spdlog/..., jemalloc/...) is a dependency's, not a room's.

What is a violation, and the reason given:
  up            the included room is on a higher layer
  sideways      the two rooms are peers on one layer (the features: alloc,
                pin, stage, nccl, nvtx never include each other)
  not in table  the included room is lower but not in the includer's list,
                or a file belongs to no room
  cycle         added to any of the above when the rooms' actual includes
                form a cycle through that edge (the path is printed)
and the table itself must be well formed: known rooms, lists that point
down only, no cycle, every file pattern matching at least one file.

Standard library only; runs under /usr/bin/python3.
"""
import argparse
import fnmatch
import os
import re
import sys
import tempfile

SCANNED_DIRS = ("lib", "interpose", "include")
SOURCE_EXTENSIONS = (".h", ".hpp", ".c", ".cc", ".cpp", ".inc")
INCLUDE_DIRS = ("lib", "include")  # after the includer's own directory
TABLE_FENCE = "```rooms"
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


class Room:
    def __init__(self, name, layer, patterns, may_include, line):
        self.name = name
        self.layer = layer
        self.patterns = patterns
        self.may_include = may_include
        self.line = line

    def holds(self, path):
        for p in self.patterns:
            if p.endswith("/"):
                if path.startswith(p):
                    return True
            elif fnmatch.fnmatchcase(path, p):
                return True
        return False


def parse_table(design_path):
    """The rooms of the ```rooms block: {name: Room}, in table order, and
    a list of problems with the table's form."""
    rooms, problems = {}, []
    try:
        with open(design_path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        return rooms, ["%s: cannot read the table of rooms: %s" % (design_path, e.strerror)]
    starts = [i for i, l in enumerate(lines) if l.strip() == TABLE_FENCE]
    if len(starts) != 1:
        return rooms, ["%s: expected one %s block, found %d" % (design_path, TABLE_FENCE, len(starts))]
    for i in range(starts[0] + 1, len(lines)):
        text = lines[i].split("#", 1)[0].strip()
        if lines[i].strip() == "```":
            break
        if not text:
            continue
        where = "%s:%d" % (design_path, i + 1)
        # name  layer  files...  |  may include...
        if text.count("|") != 1:
            problems.append("%s: a row is 'room layer files... | rooms it may include' (or '-')" % where)
            continue
        left, right = (part.split() for part in text.split("|"))
        if len(left) < 3 or not left[1].isdigit():
            problems.append("%s: a row is 'room layer files... | rooms it may include' (or '-')" % where)
            continue
        name, layer, patterns = left[0], int(left[1]), left[2:]
        may = [] if right == ["-"] else right
        if name in rooms:
            problems.append("%s: room %s listed twice" % (where, name))
            continue
        rooms[name] = Room(name, layer, patterns, may, where)
    else:
        problems.append("%s: the %s block is not closed" % (design_path, TABLE_FENCE))
    if not rooms and not problems:
        problems.append("%s: the %s block lists no room" % (design_path, TABLE_FENCE))
    return rooms, problems


def find_cycle(graph):
    """A cycle of `graph` ({node: iterable of nodes}) as a list of nodes,
    first repeated last, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def check_table(rooms):
    problems = []
    for r in rooms.values():
        for m in r.may_include:
            if m not in rooms:
                problems.append("%s: %s may include %s, which is no room" % (r.line, r.name, m))
            elif m == r.name:
                problems.append("%s: %s lists itself (a room always includes its own files)" % (r.line, r.name))
            elif rooms[m].layer >= r.layer:
                problems.append("%s: %s (layer %d) may include %s (layer %d): lists must point down"
                                % (r.line, r.name, r.layer, m, rooms[m].layer))
    cycle = find_cycle({r.name: [m for m in r.may_include if m in rooms] for r in rooms.values()})
    if cycle:
        problems.append("table: cycle %s" % " → ".join(cycle))
    return problems


def source_files(root):
    for top in SCANNED_DIRS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(SOURCE_EXTENSIONS):
                    yield os.path.relpath(os.path.join(d, f), root)


def resolve(root, includer, target):
    """The tree-relative path a quoted include names, or None when it names
    no file of the tree (a dependency's header)."""
    for base in [os.path.dirname(includer)] + list(INCLUDE_DIRS):
        candidate = os.path.normpath(os.path.join(base, target))
        if candidate.startswith(".."):
            continue
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def room_of(rooms, path):
    holders = [r.name for r in rooms.values() if r.holds(path)]
    return holders


def check_tree(root, design_path=None):
    """Every violation in the tree under `root`, as lines."""
    design_path = design_path or os.path.join(root, "docs", "design.md")
    rooms, problems = parse_table(design_path)
    if problems:
        return problems
    problems = check_table(rooms)

    files = list(source_files(root))
    file_room = {}
    for f in files:
        holders = room_of(rooms, f)
        if not holders:
            problems.append("%s: not in table: this file is in no room" % f)
        elif len(holders) > 1:
            problems.append("%s: in more than one room (%s)" % (f, ", ".join(holders)))
        else:
            file_room[f] = holders[0]
    for r in rooms.values():
        for p in r.patterns:
            if not any(Room(r.name, 0, [p], [], "").holds(f) for f in files):
                problems.append("%s: room %s: %s matches no file (moved? edit the table)" % (r.line, r.name, p))

    edges = []  # (file:line, from room, to room, included path)
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as src:
            for n, line in enumerate(src, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                target = resolve(root, f, m.group(1))
                if target is None:
                    continue
                holders = room_of(rooms, target)
                if len(holders) != 1:
                    problems.append("%s:%d: includes %s: not in table: that file is in no room" % (f, n, target))
                    continue
                if f in file_room and holders[0] != file_room[f]:
                    edges.append(("%s:%d" % (f, n), file_room[f], holders[0], target))

    actual = {}
    for _, a, b, _ in edges:
        actual.setdefault(a, set()).add(b)

    def path(a, b):
        """A path a → ... → b in the actual room graph, or None."""
        prev, todo = {a: None}, [a]
        while todo:
            n = todo.pop(0)
            if n == b:
                out = []
                while n is not None:
                    out.append(n)
                    n = prev[n]
                return out[::-1]
            for m in sorted(actual.get(n, ())):
                if m not in prev:
                    prev[m] = n
                    todo.append(m)
        return None

    for where, a, b, target in edges:
        if b in rooms[a].may_include:
            continue
        la, lb = rooms[a].layer, rooms[b].layer
        if lb > la:
            why = "up (layer %d includes layer %d)" % (la, lb)
        elif lb == la:
            why = "sideways (peers on layer %d never include each other)" % la
        else:
            why = "not in table (%s may not include %s)" % (a, b)
        back = path(b, a)
        if back:
            why += "; cycle %s" % " → ".join([a] + back)
        problems.append("%s: %s → %s (%s): %s" % (where, a, b, target, why))
    return problems


# ------------------------------------------------------------- self-test --

def write(root, rel, text):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w", encoding="utf-8") as f:
        f.write(text)


def self_test(real_design):
    """Feeds check_tree synthetic trees; returns the failures (empty: ok)."""
    failures = []
    with open(real_design, encoding="utf-8") as f:
        design = f.read()
    rooms, problems = parse_table(real_design)
    if problems:
        return ["the real table does not parse: %s" % p for p in problems]
    needed = {"base", "log", "config", "alloc", "stage"}
    if not needed <= set(rooms):
        return ["the self-test needs rooms %s in the table" % ", ".join(sorted(needed))]

    with tempfile.TemporaryDirectory(prefix="gpuslack-house-") as tmp:
        write(tmp, "docs/design.md", design)
        # One file per room of the real table, so that no room is empty.
        for r in rooms.values():
            for p in r.patterns:
                stem = p[:-1] if p.endswith("/") else os.path.dirname(p)
                name = os.path.basename(p).replace("*", "h") if not p.endswith("/") else "filler.h"
                write(tmp, os.path.join(stem, name), "#pragma once\n")
        write(tmp, "lib/base/clock.h", '#pragma once\n#include <cstdint>\n#include "log/log.h"\n')
        write(tmp, "lib/log/log.h", '#pragma once\n#include "base/range_set.h"\n#include "absl/strings/str_cat.h"\n')
        write(tmp, "lib/base/range_set.h", "#pragma once\n")
        write(tmp, "lib/log/log.cc", '#include "log.h"\n\n#include "config/options.h"\n')
        write(tmp, "lib/config/options.h", '#pragma once\n#include "log/log.h"\n')
        write(tmp, "lib/alloc/block.cc", '// an allowed include first\n#include "log/log.h"\n#include "stage/copy.h"\n')
        write(tmp, "lib/stage/copy.h", '#pragma once\n#include "config/options.h"\n')
        write(tmp, "lib/mystery/thing.h", "#pragma once\n")
        got = check_tree(tmp)

    def expect(what, pred):
        if not [l for l in got if pred(l)]:
            failures.append("not reported: %s" % what)

    expect("lib/base/clock.h:3 base → log, up",
           lambda l: l.startswith("lib/base/clock.h:3: base → log ") and ": up " in l)
    expect("lib/alloc/block.cc:3 alloc → stage, sideways",
           lambda l: l.startswith("lib/alloc/block.cc:3: alloc → stage ") and ": sideways " in l)
    expect("lib/log/log.cc:3 log → config, up, cycle log → config → log",
           lambda l: l.startswith("lib/log/log.cc:3: log → config ") and ": up " in l
           and "cycle log → config → log" in l)
    expect("lib/mystery/thing.h in no room",
           lambda l: l.startswith("lib/mystery/thing.h: not in table"))
    for allowed in ("lib/log/log.h:", "lib/config/options.h:", "lib/alloc/block.cc:2", "lib/stage/copy.h:",
                    "lib/log/log.cc:1"):
        if [l for l in got if l.startswith(allowed)]:
            failures.append("reported, though allowed: %s" % [l for l in got if l.startswith(allowed)])
    if len(got) != 4:
        failures.append("expected 4 violations, got %d:\n  %s" % (len(got), "\n  ".join(got)))

    # A table with a cycle, an unknown room, an upward list and a stale pattern.
    with tempfile.TemporaryDirectory(prefix="gpuslack-house-") as tmp:
        write(tmp, "docs/design.md", "\n".join([
            "# rooms", "", TABLE_FENCE,
            "a  0  lib/a/  | b",
            "b  0  lib/b/  | a",
            "c  1  lib/c/  | nowhere",
            "d  0  lib/d/  | c",
            "e  0  lib/e/  | -",
            "```", ""]))
        for r in "abcd":
            write(tmp, "lib/%s/x.h" % r, "#pragma once\n")
        got = check_tree(tmp)
    for what, needle in (("a table cycle", "table: cycle a → b → a"),
                         ("an unknown room", "c may include nowhere, which is no room"),
                         ("a list pointing up", "d (layer 0) may include c (layer 1)"),
                         ("a pattern that matches no file", "room e: lib/e/ matches no file")):
        if not [l for l in got if needle in l]:
            failures.append("not reported: %s (%r)\n  got: %s" % (what, needle, "\n  ".join(got)))

    # A clean tree passes.
    with tempfile.TemporaryDirectory(prefix="gpuslack-house-") as tmp:
        write(tmp, "docs/design.md", "\n".join(
            [TABLE_FENCE, "low   0  lib/low/   | -", "high  1  lib/high/  | low", "```", ""]))
        write(tmp, "lib/low/l.h", '#pragma once\n#include "l2.h"\n')
        write(tmp, "lib/low/l2.h", "#pragma once\n")
        write(tmp, "lib/high/h.cc", '#include "low/l.h"\n#include "h.h"\n#include "vendor/dep.h"\n')
        write(tmp, "lib/high/h.h", "#pragma once\n")
        got = check_tree(tmp)
    if got:
        failures.append("a clean tree was reported:\n  %s" % "\n  ".join(got))
    return failures


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(here)), help="the source tree")
    ap.add_argument("--self-test", action="store_true", help="prove the check can fail, on synthetic trees")
    a = ap.parse_args()
    if a.self_test:
        failures = self_test(os.path.join(a.root, "docs", "design.md"))
        for f in failures:
            print("self-test: " + f)
        print("self-test: %s" % ("FAILED" if failures else "ok: every planted violation was reported"))
        return 1 if failures else 0
    problems = check_tree(a.root)
    for p in problems:
        print(p)
    if problems:
        print("%d include-graph violation(s) against the table of rooms in docs/design.md" % len(problems))
        return 1
    print("include graph: every include points down (docs/design.md, the table of rooms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
