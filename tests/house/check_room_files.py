#!/usr/bin/python3
"""docs/design.md's prose about the source files against the tree.

The table of rooms (```rooms, read by check_includes.py) says which files
each room holds; the section "What each room holds" says what they are, one
entry per room ("- **name**: ..."), and the rest of the page names files as
it walks through the code. This script keeps that prose from drifting:

  check_room_files.py [--root DIR]   one line per problem, exit 1:
    - a room of the table with no entry, or an entry for no room;
    - a header or fragment (.h, .inc) of a room that its entry does not
      name in backquotes, or a source file (.cc, ...) without a header of
      its own that it does not name;
    - a file an entry names (`x.h`, `room/x.h`, `lib/room/x.h`) that does
      not exist: bare names in that room, others in the tree;
    - anywhere in design.md outside fenced blocks: a backquoted file named
      by its path under lib/ (`stage/staged_copy.h`) that does not exist,
      or a bare file name (`hooks.cc`) that names no file of the tree.
      (Paths from the tree's top, `lib/...`, are check_docs.py's.)
  check_room_files.py --self-test    plants each problem in a synthetic
                                     tree; each must be reported, and a
                                     clean tree must pass.

Standard library only; runs under /usr/bin/python3.
"""
import os
import re
import sys
import tempfile

import house_check  # the command line and the self-test's loop

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_includes  # noqa: E402  (the one reader of the table of rooms)

SECTION = "## What each room holds"
ENTRY = re.compile(r"^- \*\*([a-z_]+)\*\*")
CODE = re.compile(r"`([^`\n]+)`")
# A backquoted name that is a file of the tree by its form.
FILE_NAME = re.compile(r"^[\w./-]+\.(h|cc|inc|c|cpp|map|py|sh)$")
MUST_NAME = (".h", ".inc")  # a room's entry names every one of these
# Where a bare file name anywhere in design.md may live.
TREE_DIRS = ("lib", "interpose", "include", "tests", "bench", "scripts", "python_shim", "docs", "cmake")


def prose_lines(text):
    """(line number, line) outside fenced blocks."""
    out, fenced = [], False
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append((n, line))
    return out


def entries(text):
    """{room: (first line, entry text)} of the section SECTION."""
    out, current, inside = {}, None, False
    for n, line in prose_lines(text):
        if line.startswith("## "):
            inside = line.strip() == SECTION
            current = None
            continue
        if not inside:
            continue
        m = ENTRY.match(line)
        if m:
            current = m.group(1)
            out[current] = (n, line)
        elif current and line.startswith("  "):
            out[current] = (out[current][0], out[current][1] + " " + line.strip())
        elif line.strip():
            current = None
    return out


def tree_files(root, tops):
    for top in tops:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if not x.startswith(".") and not x.startswith("build"))
            for f in sorted(files):
                yield os.path.relpath(os.path.join(d, f), root)


def check(root):
    design = os.path.join(root, "docs", "design.md")
    rooms, problems = check_includes.parse_table(design)
    if problems:
        return problems
    with open(design, encoding="utf-8") as f:
        text = f.read()
    held = {}  # room -> every file of the tree it holds (any kind)
    for path in tree_files(root, check_includes.SCANNED_DIRS + ("lib",)):
        for r in rooms.values():
            if r.holds(path):
                held.setdefault(r.name, set()).add(path)
    written = entries(text)
    for name in rooms:
        if name not in written:
            problems.append("docs/design.md: room %s has no entry in \"%s\"" % (name, SECTION[3:]))
    for name, (line, entry) in sorted(written.items()):
        where = "docs/design.md:%d" % line
        if name not in rooms:
            problems.append("%s: an entry for %s, which is no room of the table" % (where, name))
            continue
        files = held.get(name, set())
        named = [t for t in CODE.findall(entry) if FILE_NAME.match(t)]
        named_paths = set()
        for token in named:
            hits = [f for f in files if f == token or f.endswith("/" + token)] if "/" not in token else \
                [f for f in files if f.endswith("/" + token) or f == token]
            if hits:
                named_paths.update(hits)
            elif "/" in token and (os.path.isfile(os.path.join(root, token)) or
                                   os.path.isfile(os.path.join(root, "lib", token))):
                pass  # another room's file, or the tree's
            else:
                problems.append("%s: room %s names `%s`: no such file%s" %
                                (where, name, token, "" if "/" in token else " in the room"))
        sources = sorted(f for f in files if f.endswith(check_includes.SOURCE_EXTENSIONS))
        for f in sources:
            if f in named_paths:
                continue
            stem, ext = os.path.splitext(f)
            if ext not in MUST_NAME and stem + ".h" in files:
                continue  # the .cc of a header: the header is named, or reported
            problems.append("%s: room %s: its entry does not name %s" % (where, name, f))
    basenames = {os.path.basename(f) for f in tree_files(root, TREE_DIRS)}
    for n, line in prose_lines(text):
        for token in CODE.findall(line):
            if not FILE_NAME.match(token) or token.startswith(TREE_DIRS):
                continue
            if "/" in token:
                if not os.path.isfile(os.path.join(root, "lib", token)):
                    problems.append("docs/design.md:%d: `%s`: no such file under lib/" % (n, token))
            elif token not in basenames:
                problems.append("docs/design.md:%d: `%s`: no file of the tree has that name" % (n, token))
    return problems


def self_test():
    def tree(design_tail, files):
        root = tempfile.mkdtemp(prefix="check_room_files_")
        for rel, body in files.items():
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as f:
                f.write(body)
        os.makedirs(os.path.join(root, "docs"), exist_ok=True)
        with open(os.path.join(root, "docs", "design.md"), "w", encoding="utf-8") as f:
            f.write("# d\n\n```rooms\nlow   0  lib/low/   | -\nhigh  1  lib/high/  | low\n```\n\n" + design_tail)
        return root

    files = {"lib/low/a.h": "", "lib/low/a.cc": "", "lib/low/b.cc": "", "lib/high/c.h": "", "lib/high/d.inc": ""}
    good = (SECTION + "\n\n- **low**: the a (`a.h`) and the b\n  (`b.cc`).\n"
            "- **high**: the c (`c.h`, over `low/a.h`),\n  the d (`d.inc`).\n\n## Next\n\n"
            "See `low/a.h`, `hooks` and `c.h`.\n```\n`gone.h` in a fence is not prose\n```\n")
    cases = {
        "its entry does not name lib/low/b.cc": (good.replace("\n  (`b.cc`)", "\n  (b)"), files),
        "its entry does not name lib/high/e.h": (good, dict(files, **{"lib/high/e.h": ""})),
        "names `x.h`: no such file in the room": (good.replace("`c.h`,", "`c.h`, `x.h`,"), files),
        "names `low/z.h`: no such file": (good.replace("`low/a.h`)", "`low/z.h`)"), files),
        "room high has no entry": (good.replace("- **high**", "- high"), files),
        "an entry for mid, which is no room": (good.replace("## Next", "- **mid**: x\n\n## Next"), files),
        "`low/q.h`: no such file under lib/": (good + "\nAnd `low/q.h`.\n", files),
        "`gone.cc`: no file of the tree has that name": (good + "\nAnd `gone.cc`.\n", files),
    }
    return house_check.self_test_cases("check_room_files", check, tree(good, files),
                                       {want: tree(*case) for want, case in cases.items()})


def main():
    return house_check.main("check_room_files", __doc__, check, self_test,
                            "every room's entry in docs/design.md names its files, and every file "
                            "the page names exists")


if __name__ == "__main__":
    sys.exit(main())
