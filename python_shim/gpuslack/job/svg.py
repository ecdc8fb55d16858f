"""Charts of the job report as SVG strings (svg.py).

Why SVG written here rather than a plotting library: the report must open
offline as one self-contained HTML file, and the package is pure-Python
stdlib. SVG is text the HTML embeds inline, scales without blurring, needs
no script and nothing fetched; the four charts the report needs (stacked
bars, a range plot with an expected line, a heatmap, lines over time) are a
few dozen lines each. matplotlib would add a large dependency and base64
PNGs for figures no more useful. The heatmap's cells are one small PNG
(written with zlib) inside the SVG: at 4,096 ranks a rect per cell would
weigh megabytes; the PNG is a few KiB.

Every function returns a complete <svg> element sized in CSS pixels, with
<title> tooltips where a mark needs explaining. A measured figure in a
tooltip or label (bus bandwidth, the expected line) is written by the job
report's text formatter (fmt.gbps: Note [One formatter per unit]); the
axes' tick labels are not figures of a measurement but the axis's own
round steps, short enough for the space under a tick ("64M", "0.5", "20%",
"30 s"), and stay here.
"""
import base64
import html
import math
import struct
import zlib

from . import fmt

FONT = "font-family:system-ui,sans-serif;font-size:11px"
GRID = "#e3e6ea"


def _e(s):
    return html.escape(str(s), quote=True)


def _svg(w, h, body, label):
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" '
            'aria-label="%s" style="%s">%s</svg>' % (w, h, w, h, _e(label), FONT, "".join(body)))


def legend(items, x, y, width):
    out, cx, cy = [], x, y
    for name, color in items:
        w = 18 + 6.5 * len(name)
        if cx + w > x + width:
            cx, cy = x, cy + 16
        out.append('<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f">%s</text>' % (
            cx, cy - 9, color, cx + 14, cy, _e(name)))
        cx += w + 10
    return out, cy


def stacked_bars(bars, segments, title, width=1100, height=320, highlight=()):
    """bars: [(label, {segment: share of wall})]; segments: [(key, name,
    color)]. One bar per entry, stacked to at most 100%."""
    left, top, bottom = 46, 28, 84
    ph = height - top - bottom
    pw = width - left - 12
    body = ['<text x="%d" y="16" font-weight="600">%s</text>' % (left, _e(title))]
    for i in range(0, 101, 25):
        y = top + ph * (1 - i / 100)
        body.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s"/><text x="%d" y="%.1f" '
                    'text-anchor="end">%d%%</text>' % (left, left + pw, y, y, GRID, left - 4, y + 4, i))
    n = max(1, len(bars))
    slot = pw / n
    bw = max(1.0, slot * 0.8)
    widest = max([len(label) for label, _ in bars] or [1]) * 6.5 + 8
    label_every = max(1, int(math.ceil(n * widest / pw)))
    for i, (label, shares) in enumerate(bars):
        x = left + i * slot + (slot - bw) / 2
        y = top + ph
        tip = [label]
        for key, name, color in segments:
            v = max(0.0, shares.get(key, 0.0))
            h = min(ph * min(v, 1.0), y - top)   # threads summed can pass 100%: clipped at the top
            if h > 0:
                y -= h
                body.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' % (x, y, bw, h, color))
            tip.append("%s %.1f%%" % (name, 100 * v))
        body.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="transparent"><title>%s</title></rect>' % (
            x, top, bw, ph, _e("\n".join(tip))))
        lx, anchor = x + bw / 2, "middle"
        if lx + len(label) * 3.3 > width:       # the last labels: kept inside the chart
            lx, anchor = width - 2, "end"
        if label in highlight and label_every > 1:
            # a second row, so that a straggler's label never hides under another
            body.append('<text x="%.1f" y="%d" text-anchor="%s" fill="#c0392b" font-weight="700">%s</text>' % (
                lx, top + ph + 26, anchor, _e(label)))
        elif i % label_every == 0 or label in highlight:
            body.append('<text x="%.1f" y="%d" text-anchor="%s"%s>%s</text>' % (
                lx, top + ph + 13, anchor, ' fill="#c0392b" font-weight="700"' if label in highlight else "",
                _e(label)))
    leg, _ = legend([(name, color) for _, name, color in segments], left, top + ph + 44, pw)
    return _svg(width, height, body + leg, title)


def busbw(groups, expected, title, width=1100, height=300):
    """groups: [{size_bucket, label, min, p50, max, below: [(rank, v)]}]
    on a log2 size axis; expected: GB/s or 0."""
    left, top, bottom = 56, 28, 44
    ph, pw = height - top - bottom, width - left - 20
    body = ['<text x="%d" y="16" font-weight="600">%s</text>' % (left, _e(title))]
    if not groups:
        return _svg(width, 60, body + ['<text x="%d" y="40">no timed collectives</text>' % left], title)
    ymax = max([g["max"] for g in groups] + [expected]) * 1.15 or 1.0
    b0 = min(g["size_bucket"] for g in groups) - 1
    b1 = max(g["size_bucket"] for g in groups) + 1

    def X(b):
        return left + pw * (b - b0) / max(1, b1 - b0)

    def Y(v):
        return top + ph * (1 - v / ymax)
    for i in range(5):
        v = ymax * i / 4
        body.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s"/><text x="%d" y="%.1f" '
                    'text-anchor="end">%.2g</text>' % (left, left + pw, Y(v), Y(v), GRID, left - 4, Y(v) + 4, v))
    body.append('<text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">busbw GB/s</text>' % (
        top + ph / 2, top + ph / 2))
    for b in range(b0, b1 + 1):
        label = _size(b)
        body.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (X(b), top + ph + 14, label))
    body.append('<text x="%d" y="%d" text-anchor="middle">message size (bytes per call)</text>' % (
        left + pw / 2, height - 6))
    if expected:
        body.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#2e86de" stroke-dasharray="6 4" '
                    'stroke-width="2"/><text x="%d" y="%.1f" fill="#2e86de">expected %s GB/s</text>' % (
                        left, left + pw, Y(expected), Y(expected), left + pw - 130, Y(expected) - 5,
                        fmt.gbps(expected)))
    for g in groups:
        x = X(g["size_bucket"]) + g.get("offset", 0)
        tip = "%s: busbw min %s, p50 %s, max %s GB/s over %d ranks" % (
            g["label"], fmt.gbps(g["min"]), fmt.gbps(g["p50"]), fmt.gbps(g["max"]), g["n"])
        body.append('<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#555" stroke-width="2"/>' % (
            x, x, Y(g["min"]), Y(g["max"])))
        body.append('<rect x="%.1f" y="%.1f" width="14" height="4" fill="#27ae60"><title>%s</title></rect>' % (
            x - 7, Y(g["p50"]) - 2, _e(tip)))
        for rank, v in g["below"][:200]:
            body.append('<circle cx="%.1f" cy="%.1f" r="3" fill="#c0392b" fill-opacity="0.7"><title>rank %d: '
                        '%s GB/s</title></circle>' % (x + 12, Y(v), rank, fmt.gbps(v)))
    leg, _ = legend([("min–max over ranks", "#555"), ("p50", "#27ae60"), ("ranks below expected", "#c0392b")],
                    left + 8, top + 12, pw)
    return _svg(width, height, body + leg, title)


def _size(b):
    v = 1 << b
    for unit, k in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v >= k:
            return "%d%s" % (v // k, unit)
    return str(v)


def _png(pixels, w, h):
    """An RGB PNG from rows of (r, g, b) tuples, with zlib only."""
    raw = b"".join(b"\x00" + bytes(c for px in row for c in px) for row in pixels)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def idle_color(v):
    """0 (busy) pale green -> 0.5 amber -> 1 (idle) dark red; None grey."""
    if v is None:
        return (235, 235, 235)
    v = min(1.0, max(0.0, v))
    stops = [(0.0, (232, 246, 238)), (0.25, (170, 222, 160)), (0.5, (250, 200, 90)), (0.75, (235, 120, 60)),
             (1.0, (150, 20, 30))]
    for (a, ca), (b, cb) in zip(stops, stops[1:]):
        if v <= b:
            f = (v - a) / (b - a)
            return tuple(int(ca[i] + f * (cb[i] - ca[i])) for i in range(3))
    return stops[-1][1]


def heatmap(rows, t_end, title, width=1100, row_px=None):
    """rows: [(label, [value 0..1 or None per column])], one per rank or
    group of ranks; drawn as a PNG inside the SVG, labelled every few rows."""
    left, top = 90, 28
    n = max(1, len(rows))
    cols = max(len(v) for _, v in rows) if rows else 1
    row_px = row_px or max(2, min(16, 420 // n))
    ph, pw = row_px * n, width - left - 20
    pixels = [[idle_color(v[i] if i < len(v) else None) for i in range(cols)] for _, v in rows]
    uri = "data:image/png;base64," + base64.b64encode(_png(pixels, cols, n)).decode()
    height = top + ph + 56
    body = ['<text x="%d" y="16" font-weight="600">%s</text>' % (left, _e(title)),
            '<image x="%d" y="%d" width="%d" height="%d" preserveAspectRatio="none" style="image-rendering:pixelated" '
            'href="%s"/>' % (left, top, pw, ph, uri)]
    every = max(1, int(math.ceil(n * 13.0 / ph)))
    for i, (label, _) in enumerate(rows):
        if i % every == 0:
            body.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (left - 4, top + (i + 0.5) * row_px + 4,
                                                                              _e(label)))
    for i in range(6):
        x = left + pw * i / 5
        body.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, top + ph + 14, _t(t_end * i / 5)))
    body.append('<text x="%d" y="%d" text-anchor="middle">time since start</text>' % (left + pw / 2, top + ph + 28))
    for i in range(11):
        c = idle_color(i / 10)
        body.append('<rect x="%d" y="%d" width="18" height="10" fill="rgb%s"/>' % (left + i * 18, top + ph + 36, str(c)))
    body.append('<text x="%d" y="%d">GPU idle share: 0 (busy) to 100%% (idle); grey: no data</text>' % (
        left + 11 * 18 + 8, top + ph + 45))
    return _svg(width, height, body, title)


def _t(s):
    return "%.0f s" % s if s >= 10 else "%.1f s" % s


def lines(t, series, title, unit_fmt, width=1100, height=300):
    """t: x values (s); series: [(name, color, [y or None], dashed)]."""
    left, top, bottom = 70, 28, 76
    ph, pw = height - top - bottom, width - left - 20
    body = ['<text x="%d" y="16" font-weight="600">%s</text>' % (left, _e(title))]
    ys = [y for _, _, v, _ in series for y in v if y is not None]
    ymax = (max(ys) if ys else 1.0) * 1.1 or 1.0
    tmax = t[-1] if t else 1.0

    def X(x):
        return left + pw * x / tmax

    def Y(v):
        return top + ph * (1 - v / ymax)
    for i in range(5):
        v = ymax * i / 4
        body.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s"/><text x="%d" y="%.1f" '
                    'text-anchor="end">%s</text>' % (left, left + pw, Y(v), Y(v), GRID, left - 4, Y(v) + 4, unit_fmt(v)))
    for i in range(6):
        body.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (
            X(tmax * i / 5), top + ph + 14, _t(tmax * i / 5)))
    for name, color, v, dashed in series:
        pts, segs = [], []
        for x, y in zip(t, v):
            if y is None:
                if pts:
                    segs.append(pts)
                pts = []
            else:
                pts.append("%.1f,%.1f" % (X(x), Y(y)))
        if pts:
            segs.append(pts)
        for s in segs:
            body.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' % (
                color, ' stroke-dasharray="5 3"' if dashed else "", " ".join(s)))
    leg, _ = legend([(n, c) for n, c, _, _ in series], left, top + ph + 36, pw)
    return _svg(width, height, body + leg, title)
