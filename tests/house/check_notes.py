#!/usr/bin/python3
"""The named notes against the index in docs/design.md.

A rule that is easy to break is written once, where the code enforces it, as
a comment that begins `Note [Name]:` (after the comment marker), and cited
elsewhere as `Note [Name]` without that colon (`See Note [Name]: ...` is a
citation too). docs/design.md's "Named notes" table lists every note and the
file that defines it. This script holds the three to each other:

  check_notes.py [--root DIR]   one line per problem, exit 1 if any
  check_notes.py --self-test    proves each problem below is reported, on a
                                synthetic tree

Problems:
  undefined        a note is cited and defined nowhere
  defined twice    two places begin a comment with `Note [Name]:`
  not indexed      a defined note has no row in the index
  wrong file       the index row names another file than the definition's
  stale row        an index row for a note that nothing defines
  indexed twice    two rows for one note

A citation may wrap across comment lines (`Note [Freeing without` / `//
synchronizing]`): lines are joined, their comment markers dropped, before
citations are read. The files read are the tree's tracked files (git
ls-files), or every file when the root is not a git checkout.
"""
import os
import re
import subprocess
import sys
import tempfile

import house_check  # the command line and the self-test's loop

INDEX_FILE = "docs/design.md"
THIS_FILE = "tests/house/check_notes.py"   # its own examples are not notes
INDEX_HEADING = "## Named notes"
SKIPPED_DIRS = {".git", "build", "build-asan", "build-tsan", "build-wheel", "__pycache__"}
TEXT_SUFFIXES = (".h", ".cc", ".inc", ".c", ".py", ".sh", ".cmake", ".txt", ".md", ".json", ".toml", ".cfg", ".ini")

DEFINITION = re.compile(r"^\s*(?://+|#+|\*|/\*)?\s*Note \[([^\]]+)\]:")
LINE_JOIN = re.compile(r"[ \t]*\n[ \t]*(?://+|#+|\*(?!/)|>)?[ \t]*")
CITATION = re.compile(r"Note \[([^\]\n]{1,100})\]")
# What the prose that explains the convention writes in place of a name.
PLACEHOLDERS = {"...", "Name"}
INDEX_ROW = re.compile(r"^\|\s*([^|`]+?)\s*\|\s*`([^`]+)`")


def tree_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True)
        names = [n for n in out.stdout.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for top, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
            names += [os.path.relpath(os.path.join(top, f), root) for f in files]
    return sorted(n for n in names if n.endswith(TEXT_SUFFIXES) or os.path.basename(n) == "CMakeLists.txt")


def read_text(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def read_index(text):
    """The rows of the index table: [(name, file, line number)]."""
    rows, inside = [], False
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("## "):
            inside = line.strip() == INDEX_HEADING
            continue
        m = INDEX_ROW.match(line) if inside else None
        if m and m.group(1) != "note":
            rows.append((m.group(1), m.group(2), number))
    return rows


def check(root):
    definitions, citations = {}, {}
    for name in tree_files(root):
        if name == THIS_FILE:
            continue
        text = read_text(os.path.join(root, name))
        if text is None:
            continue
        if name != INDEX_FILE and not name.endswith(".md"):
            for number, line in enumerate(text.split("\n"), 1):
                m = DEFINITION.match(line)
                if m:
                    definitions.setdefault(m.group(1), []).append((name, number))
        for m in CITATION.finditer(LINE_JOIN.sub(" ", text)):
            if m.group(1) not in PLACEHOLDERS:
                citations.setdefault(m.group(1), set()).add(name)

    index_text = read_text(os.path.join(root, INDEX_FILE)) or ""
    rows = read_index(index_text)
    problems = []
    if not rows:
        problems.append(f"{INDEX_FILE}: no '{INDEX_HEADING}' table found")
    indexed = {}
    for name, path, number in rows:
        if name in indexed:
            problems.append(f"{INDEX_FILE}:{number}: indexed twice: Note [{name}] (also line {indexed[name][1]})")
        else:
            indexed[name] = (path, number)

    for name in sorted(citations):
        if name not in definitions:
            where = ", ".join(sorted(citations[name])[:3])
            problems.append(f"undefined: Note [{name}] is cited ({where}) and defined nowhere "
                            f"(begin its comment with 'Note [{name}]:')")
    for name in sorted(definitions):
        places = definitions[name]
        if len(places) > 1:
            listed = ", ".join(f"{f}:{n}" for f, n in places)
            problems.append(f"defined twice: Note [{name}] at {listed} (cite it elsewhere as 'See Note [{name}]')")
        path, number = places[0]
        if len(places) > 1:
            continue
        if name not in indexed:
            problems.append(f"{path}:{number}: not indexed: Note [{name}] has no row in {INDEX_FILE}'s "
                            f"'{INDEX_HEADING}' table")
        elif indexed[name][0] != path:
            problems.append(f"{INDEX_FILE}:{indexed[name][1]}: wrong file: Note [{name}] is defined in "
                            f"{path}, the index says {indexed[name][0]}")
    for name, (path, number) in sorted(indexed.items()):
        if name not in definitions:
            problems.append(f"{INDEX_FILE}:{number}: stale row: nothing defines Note [{name}]")
    return problems


def self_test():
    files = {
        "lib/a.h": "// Note [Alpha]: defined once, indexed.\n"
                   "// Note [Twice]: one definition,\n",
        "lib/a.cc": "// Note [Twice]: and a second one.\n"
                    "// See Note [Alpha]: a citation with a colon is no definition.\n"
                    "// Cites Note [Nowhere] and Note [Wrapped\n// across lines].\n",
        "lib/b.h": "# Note [Unindexed]: defined, not in the table.\n"
                   "// Note [Moved]: defined here, the index says elsewhere.\n"
                   "// Note [Wrapped across lines]: defined.\n",
        INDEX_FILE: "# map\n\n## Named notes\n\n| note | defined in |\n|---|---|\n"
                    "| Alpha | `lib/a.h` |\n| Twice | `lib/a.h` |\n| Moved | `lib/a.cc` |\n"
                    "| Wrapped across lines | `lib/b.h` |\n| Gone | `lib/a.h` |\n| Alpha | `lib/a.h` |\n",
    }
    expected = [
        ("undefined", "Note [Nowhere]"),
        ("defined twice", "Note [Twice]"),
        ("not indexed", "Note [Unindexed]"),
        ("wrong file", "Note [Moved]"),
        ("stale row", "Note [Gone]"),
        ("indexed twice", "Note [Alpha]"),
    ]
    with tempfile.TemporaryDirectory() as root:
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
            with open(os.path.join(root, name), "w") as f:
                f.write(text)
        problems = check(root)
    failed = False
    for kind, note in expected:
        if not any(kind + ":" in p and note in p for p in problems):
            print(f"self-test: '{kind}' for {note} was not reported", file=sys.stderr)
            failed = True
    if len(problems) != len(expected):
        print(f"self-test: {len(problems)} problems reported, {len(expected)} expected:", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        failed = True
    if failed:
        return 1
    print(f"self-test: all {len(expected)} kinds of problem reported")
    return 0


def main():
    return house_check.main("check_notes", __doc__, check, self_test,
                            "every cited note is defined once and indexed")


if __name__ == "__main__":
    sys.exit(main())
