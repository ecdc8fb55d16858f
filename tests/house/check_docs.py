#!/usr/bin/python3
"""The README and docs/ against the house's rules for them.

The README is a newcomer's page and the feature manual lives in docs/, one
page per feature; this script keeps it so:

  check_docs.py [--root DIR]   one line per violation, exit 1:
                               - README.md longer than 250 lines;
                               - a relative link in README.md or a
                                 docs/*.md page to a file that does not
                                 exist, or to a #heading its page lacks;
                               - a docs/*.md page the README's map does not
                                 link (a page nobody can find);
                               - a path of the tree named in backquotes
                                 (`scripts/x.sh`, `lib/alloc/`, ...) that
                                 does not exist.
  check_docs.py --self-test    proves each check can fail: a synthetic tree
                               with each violation, every one of which must
                               be reported, and a clean one that must pass.

Links to docs/install.md, docs/doctor.md and docs/deploy.md are checked
like any other: nothing is excused.

Standard library only; runs under /usr/bin/python3.
"""
import os
import re
import sys
import tempfile

import house_check  # the command line and the self-test's loop

MAX_README_LINES = 250
# Backquoted names that start with one of these are paths of the tree.
TREE_DIRS = ("bench/", "cmake/", "docs/", "include/", "interpose/", "lib/", "python_shim/", "scripts/", "tests/")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")


def slug(heading):
    """A heading's anchor as GitHub makes it: lower case, punctuation other
    than '-' and '_' dropped, spaces to '-'."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    out, fenced = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and line.startswith("#"):
                out.add(slug(line.lstrip("#")))
    return out


def prose(text):
    """The text outside fenced blocks (a screen or a shell line is not a link)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return "\n".join(out)


def check(root):
    problems = []
    readme = os.path.join(root, "README.md")
    with open(readme, encoding="utf-8") as f:
        readme_text = f.read()
    lines = readme_text.count("\n") + (0 if readme_text.endswith("\n") or not readme_text else 1)
    if lines > MAX_README_LINES:
        problems.append("README.md: %d lines, more than %d: move the detail into a docs/ page" %
                        (lines, MAX_README_LINES))
    docs = os.path.join(root, "docs")
    pages = sorted(os.path.join("docs", n) for n in os.listdir(docs) if n.endswith(".md"))
    linked_from_readme = set()
    for rel in ["README.md"] + pages:
        path = os.path.join(root, rel)
        with open(path, encoding="utf-8") as f:
            text = prose(f.read())
        here = os.path.dirname(path)
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):  # https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(here, file_part)) if file_part else path
            if rel == "README.md":
                linked_from_readme.add(os.path.relpath(dest, root))
            if not os.path.exists(dest):
                problems.append("%s: link to %s: no such file" % (rel, target))
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append("%s: link to %s: %s has no heading #%s" %
                                (rel, target, os.path.relpath(dest, root), anchor))
        for name in CODE.findall(text):
            if not name.startswith(TREE_DIRS) or re.search(r"[\s*<>{}$|]|\.\.\.", name):
                continue
            if not os.path.exists(os.path.join(root, name)):
                problems.append("%s: `%s`: no such path in the tree" % (rel, name))
    for page in pages:
        if page not in linked_from_readme:
            problems.append("README.md: the map of docs/ does not link %s" % page)
    return problems


def self_test():
    def tree(readme, pages):
        root = tempfile.mkdtemp(prefix="check_docs_")
        os.makedirs(os.path.join(root, "docs"))
        os.makedirs(os.path.join(root, "scripts"))
        open(os.path.join(root, "scripts", "run.sh"), "w").close()
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write(readme)
        for name, text in pages.items():
            with open(os.path.join(root, "docs", name), "w") as f:
                f.write(text)
        return root

    good_readme = "# x\n\nRun `scripts/run.sh`. [a](docs/a.md), [b](docs/b.md#part-two-b_c)\n"
    good_pages = {"a.md": "# A\n\nSee [b](b.md) and [self](#a).\n```\n[not a link](nowhere.md)\n```\n",
                  "b.md": "# B\n\n## Part two (`b_c`)\n"}
    cases = {
        "more than 250": (good_readme + "line\n" * 250, good_pages),
        "no such file": (good_readme + "[c](docs/install.md)\n", good_pages),
        "has no heading": (good_readme.replace("#part-two-b_c", "#part-three"), good_pages),
        "does not link docs/c.md": (good_readme, dict(good_pages, **{"c.md": "# C\n"})),
        "no such path in the tree": (good_readme + "`scripts/gone.sh`\n", good_pages),
    }
    return house_check.self_test_cases("check_docs", check, tree(good_readme, good_pages),
                                       {want: tree(*case) for want, case in cases.items()})


def main():
    return house_check.main("check_docs", __doc__, check, self_test,
                            "README.md within %d lines; every link, heading and path named exists; "
                            "every docs/ page is on the README's map" % MAX_README_LINES)


if __name__ == "__main__":
    sys.exit(main())
