"""Number formatting shared by the job report's text and HTML (fmt.py)."""


def seconds(s):
    if s is None:
        return "-"
    a = abs(s)
    if a == 0:
        return "0"
    if a < 1e-3:
        return "%.0f us" % (s * 1e6)
    if a < 1:
        return "%.1f ms" % (s * 1e3)
    if a < 600:
        return "%.2f s" % s
    return "%.0f s" % s


def nbytes(b):
    if b is None:
        return "-"
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(b) >= k:
            return "%.1f %s" % (b / k, unit)
    return "%d B" % b


def share(x):
    return "%.1f%%" % (100 * x)


def size_bucket(b):
    return ">=" + nbytes(1 << b)


def ranks(lst, limit=8):
    s = ", ".join(str(r) for r in lst[:limit])
    return s + (" and %d more" % (len(lst) - limit) if len(lst) > limit else "")
