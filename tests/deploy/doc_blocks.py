"""The fenced code blocks of docs/deploy.md that the tests run, so that the
page's commands are the tested ones. A block a test takes is marked by the
line `<!-- block: NAME -->` right before its opening fence.

    block(NAME)       the text of the block marked NAME (its fence lines
                      left out); a clear error when there is none
    blocks(LANG)      every block whose fence says LANG (```yaml), in order,
                      as (line number of its first line, text)

Standard library only."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "deploy.md")
MARK = re.compile(r"^<!-- block: ([A-Za-z0-9_.-]+) -->\s*$")


class MissingBlock(Exception):
    pass


def _lines(page):
    with open(page, encoding="utf-8") as f:
        return f.read().split("\n")


def _fenced(lines):
    """(opening line index, language, text) of each fenced block."""
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang = lines[i][3:].strip()
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if j == len(lines):
                raise MissingBlock("%s: the block opened at line %d is never closed" % (PAGE, i + 1))
            out.append((i, lang, "\n".join(lines[i + 1:j]) + "\n"))
            i = j + 1
        else:
            i += 1
    return out


def block(name, page=PAGE):
    lines = _lines(page)
    starts = {i: text for i, _, text in _fenced(lines)}
    found = [i for i, line in enumerate(lines) if MARK.match(line) and MARK.match(line).group(1) == name]
    if len(found) != 1:
        raise MissingBlock("%s: %d lines '<!-- block: %s -->', expected one" % (page, len(found), name))
    if found[0] + 1 not in starts:
        raise MissingBlock("%s: '<!-- block: %s -->' (line %d) is not right before a fenced block"
                           % (page, name, found[0] + 1))
    return starts[found[0] + 1]


def blocks(lang, page=PAGE):
    return [(i + 2, text) for i, block_lang, text in _fenced(_lines(page)) if block_lang == lang]
