"""What the house's checks (check_docs.py, check_notes.py,
check_room_files.py) share: the command line and the self-test's loop.

Each check is a function check(root) -> [one line per problem]; its
self-test builds small trees and wants each case's problem reported.
"""
import argparse
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def self_test_cases(name, check, clean_root, cases):
    """0 when `clean_root` gives no problem and each case's root gives one
    that contains its key; else 1, one line per miss. cases: {wanted text:
    a root}."""
    failures = []
    clean = check(clean_root)
    if clean:
        failures.append("a clean tree was reported: %s" % clean)
    for want, root in cases.items():
        got = check(root)
        if not any(want in p for p in got):
            failures.append("not reported: %s (got %s)" % (want, got))
    for f in failures:
        print("%s self-test: %s" % (name, f))
    if not failures:
        print("%s self-test: each problem reported, the clean tree passed" % name)
    return 1 if failures else 0


def main(name, doc, check, self_test, passed):
    """The command line of a check: [--root DIR] prints each problem (exit
    1) or `passed` (exit 0); --self-test runs self_test()."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--root", default=ROOT)
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args()
    if a.self_test:
        return self_test()
    problems = check(os.path.abspath(a.root))
    for line in problems:
        print(line)
    if problems:
        print("%s: %d problem(s)" % (name, len(problems)), file=sys.stderr)
        return 1
    print("%s: %s" % (name, passed))
    return 0
