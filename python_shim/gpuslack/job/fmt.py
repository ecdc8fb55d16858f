"""Number formatting for the job report's text and HTML (fmt.py).

Seconds, bytes and shares are the library's formatters (gpuslack.labels:
units.h through gpuslack_format_figure), so a figure reads the same here as
in each rank's text summary (Note [One formatter per unit]). What is the
job report's own: a list of ranks."""
from .. import labels

seconds = labels.seconds
nbytes = labels.nbytes
share = labels.percent
gbps = labels.gbps
size_bucket = labels.size_bucket
link_gbps = labels.link_gbps
link_gbits = labels.link_gbits
waves = labels.waves


def ranks(lst, limit=8):
    s = ", ".join(str(r) for r in lst[:limit])
    return s + (" and %d more" % (len(lst) - limit) if len(lst) > limit else "")
