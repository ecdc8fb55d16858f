#!/usr/bin/env python3
"""Converts an allocation trace into gpuslack's replay event stream.

    trace_events.py [--format auto|pytorch|rmm|minimalloc] [--device N]
                    [--scale K] [--name NAME] [-o OUT] TRACE

bench/trace_replay reads the stream and replays it through the VMM
allocator (bench/README.md, "Trace replay"). Python 3.9+, standard library
only. A file that cannot be read or does not hold what its format promises
gets one line on stderr and exit status 1; nothing is written then.

Inputs (--format auto tells them apart by their first bytes; a gzip file,
as bench/traces/ keeps its snapshots, is read through gzip first):

  pytorch     A PyTorch CUDA memory snapshot (torch.cuda.memory._snapshot(),
              pickled): a dict of `segments` (the state when the snapshot was
              taken) and `device_traces[d]` (the recent events of device d).
              Loaded with an unpickler that refuses every class: a snapshot
              is made of dicts, lists, strings and numbers only, and a
              pickle that asks for a class is rejected (it could run code).
              - `alloc` (its size is the size the caller asked for) and
                `free_requested` are the block-level requests, what an
                application-level allocator is asked for; `free_completed`
                (PyTorch's own deferral after record_stream) is not a request.
              - `segment_alloc`/`segment_free`/`segment_map`/`segment_unmap`
                are PyTorch's reserved memory over time; their running sum
                gives its peak reserved bytes.
              - The recorder is a ring buffer: the trace may begin mid-run.
                `segments` is the state at the END of the trace, so the state
                at its start is rolled back from it: reserved at the start is
                the segments' total minus what the trace's segment events
                added; blocks live at the start are the `active_allocated`
                blocks that no `alloc` of the trace made (they were live
                throughout), plus blocks the trace frees before allocating
                anything at their address (they were live when it began; the
                size is the free's). Both are emitted first, as `a` lines.
              - The device with the most events is converted unless --device.
  rmm         The CSV of RMM's logging_resource_adaptor: the header
              `Thread,Time,Action,Pointer,Size,Stream`, then one row per
              call, in call order: thread id, HH:MM:SS.ffffff, `allocate`,
              `free` or `allocate failure` (skipped: nothing was allocated),
              the pointer as printf's %p ("0x7f..", "(nil)"), the size in
              bytes (decimal), the stream in hex ("0" for the default
              stream). These are RMM's own writer and replay parser
              (cpp/src/mr/detail/logging_resource_adaptor_impl.cpp,
              cpp/benchmarks/utilities/log_parser.hpp); RMM's user guide
              shows `deallocate` in an example, which its writer never
              writes and its parser rejects, and so does this one.
  minimalloc  google/minimalloc's CSV `id,lower,upper,size` (further columns
              are ignored): buffer `id` is allocated at time `lower` and
              freed at time `upper`. At equal times frees come before
              allocations (a buffer ending at t and one starting at t may
              share memory); ties keep the order of the ids.

Output: UTF-8 text, one record per line.

  # gpuslack-events 1        the first line, always
  # <key> <value>            header lines, all before the first event:
      name                   the trace's name (--name, else the file's stem)
      source                 pytorch-snapshot | rmm-log | minimalloc
      scale                  every size was multiplied by this (--scale)
      seeded                 the first <n> `a` lines are blocks already live
                             when the trace began
      dropped_frees          frees of blocks never seen, left out
      implied_frees          allocations at an address still live: the
                             earlier block is freed first (a lost free)
      skipped                records that are not requests (allocate
                             failure, free_completed, oom, snapshot, ...)
      pytorch_peak_reserved  pytorch only: the peak of PyTorch's reserved
                             bytes over the trace, from its segment events
      pytorch_reserved_at_start  pytorch only
  a <id> <size> <stream>     allocate <size> bytes (>= 0) for block <id>
  f <id>                     free block <id>

Ids are 0, 1, 2, ... in the order of the `a` lines and never reused; a
block is freed at most once. Streams are decimal integers, the value of the
cudaStream_t the trace recorded (0: the legacy default stream); minimalloc
has none and says 0.
"""

import argparse
import csv
import gzip
import io
import os
import pickle
import sys

FORMAT_VERSION = 1


class TraceError(Exception):
    """A file that is not what its format promises: one line for the user."""


# --- the event stream --------------------------------------------------------


class EventStream:
    """Collects the events of one trace and writes them in the format above."""

    def __init__(self, name, source, scale=1):
        self.header = {"name": name, "source": source, "scale": scale}
        self.lines = []
        self.next_id = 0
        self.live = {}  # the trace's key (an address, an id) -> our id
        self.counts = {"seeded": 0, "dropped_frees": 0, "implied_frees": 0, "skipped": 0}
        self.scale = scale

    def alloc(self, key, size, stream=0):
        if key in self.live:  # the trace lost a free: the old block is gone
            self.counts["implied_frees"] += 1
            self.free(key)
        block = self.next_id
        self.next_id += 1
        self.live[key] = block
        self.lines.append("a %d %d %d" % (block, size * self.scale, stream))

    def free(self, key):
        block = self.live.pop(key, None)
        if block is None:
            self.counts["dropped_frees"] += 1
            return
        self.lines.append("f %d" % block)

    def seed(self, key, size, stream=0):
        self.alloc(key, size, stream)
        self.counts["seeded"] += 1

    def skip(self):
        self.counts["skipped"] += 1

    def write(self, out):
        out.write("# gpuslack-events %d\n" % FORMAT_VERSION)
        header = dict(self.header)
        header.update(self.counts)
        for key, value in header.items():
            out.write("# %s %s\n" % (key, value))
        for line in self.lines:
            out.write(line)
            out.write("\n")


# --- PyTorch memory snapshots --------------------------------------------------


class RefusingUnpickler(pickle.Unpickler):
    """Loads plain data only: every class a pickle names is refused."""

    def find_class(self, module, name):
        raise TraceError(
            "refused: the pickle asks for the class %s.%s (a memory snapshot needs none, "
            "and loading one could run code)" % (module, name)
        )


def load_snapshot(data):
    try:
        return RefusingUnpickler(io.BytesIO(data)).load()
    except TraceError:
        raise
    except Exception as e:  # a broken pickle fails in many ways; all mean "not a snapshot"
        raise TraceError("not a readable pickle (%s: %s)" % (type(e).__name__, e))


def field(record, key, kind, where):
    """record[key], which must be a `kind`; else a TraceError naming `where`."""
    if not isinstance(record, dict) or key not in record:
        raise TraceError("%s has no %r: not a PyTorch memory snapshot" % (where, key))
    value = record[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise TraceError("%s: %r is not %s" % (where, key, getattr(kind, "__name__", kind)))
    return value


def convert_pytorch(data, name, scale, device=None):
    snap = load_snapshot(data)
    if not isinstance(snap, dict):
        raise TraceError("the pickle holds a %s, not a PyTorch memory snapshot (a dict)" % type(snap).__name__)
    segments = field(snap, "segments", list, "the snapshot")
    traces = field(snap, "device_traces", list, "the snapshot")
    if device is None:
        if not any(traces):
            raise TraceError("the snapshot records no trace events (was _record_memory_history on?)")
        device = max(range(len(traces)), key=lambda d: len(traces[d]))
    if not 0 <= device < len(traces):
        raise TraceError("the snapshot has no device %d (it has %d)" % (device, len(traces)))
    events = traces[device]
    if not isinstance(events, list):
        raise TraceError("device_traces[%d] is not a list" % device)

    out = EventStream(name, "pytorch-snapshot", scale)
    # Pass 1: what the trace itself allocates, and PyTorch's reserved delta.
    allocated_in_trace = set()
    segment_delta = {"segment_alloc": 1, "segment_map": 1, "segment_free": -1, "segment_unmap": -1}
    reserved_added = 0
    parsed = []
    for i, e in enumerate(events):
        where = "device_traces[%d][%d]" % (device, i)
        action = field(e, "action", str, where)
        if action in ("alloc", "free_requested") or action in segment_delta:
            addr = field(e, "addr", int, where)
            size = field(e, "size", int, where)
            if size < 0:
                raise TraceError("%s: negative size" % where)
            stream = e.get("stream", 0)
            if not isinstance(stream, int):
                raise TraceError("%s: 'stream' is not an int" % where)
            parsed.append((action, addr, size, stream))
            if action == "alloc":
                allocated_in_trace.add(addr)
            elif action in segment_delta:
                reserved_added += segment_delta[action] * size
        else:
            parsed.append((action, None, None, None))

    # The state at the start, rolled back from the state at the end.
    reserved_at_end = 0
    for j, s in enumerate(segments):
        where = "segments[%d]" % j
        if field(s, "device", int, where) != device:
            continue
        reserved_at_end += field(s, "total_size", int, where)
        for k, b in enumerate(field(s, "blocks", list, where)):
            bwhere = "%s.blocks[%d]" % (where, k)
            if field(b, "state", str, bwhere) != "active_allocated":
                continue
            addr = field(b, "address", int, bwhere)
            if addr in allocated_in_trace:
                continue  # made by the trace: it is replayed there
            size = b.get("requested_size", b.get("size"))
            if not isinstance(size, int) or size < 0:
                raise TraceError("%s: no usable size" % bwhere)
            out.seed(addr, size, s.get("stream", 0) if isinstance(s.get("stream", 0), int) else 0)
    reserved_at_start = reserved_at_end - reserved_added
    if reserved_at_start < 0:
        raise TraceError(
            "the segment events add %d bytes but the segments hold only %d: the segments and the trace disagree"
            % (reserved_added, reserved_at_end)
        )
    # Blocks the trace frees before anything was allocated at their address
    # were live when it began: seed them too (size: the free's).
    touched = set()
    for action, addr, size, stream in parsed:
        if action == "alloc":
            touched.add(addr)
        elif action == "free_requested" and addr not in touched and addr not in out.live:
            touched.add(addr)
            out.seed(addr, size, stream)

    # Pass 2: the events.
    reserved = peak = reserved_at_start
    for action, addr, size, stream in parsed:
        if action == "alloc":
            out.alloc(addr, size, stream)
        elif action == "free_requested":
            out.free(addr)
        elif action in segment_delta:
            reserved += segment_delta[action] * size
            peak = max(peak, reserved)
        else:
            out.skip()  # free_completed, snapshot, oom, ...
    out.header["pytorch_peak_reserved"] = peak * scale
    out.header["pytorch_reserved_at_start"] = reserved_at_start * scale
    out.header["device"] = device
    return out


# --- RMM logs ------------------------------------------------------------------

RMM_HEADER = ["Thread", "Time", "Action", "Pointer", "Size", "Stream"]


def parse_int(text, base, what, line):
    try:
        return int(text, base)
    except ValueError:
        raise TraceError("line %d: %s %r is not a number" % (line, what, text))


def convert_rmm(text, name, scale):
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    if header is None or [h.strip() for h in header] != RMM_HEADER:
        raise TraceError("not an RMM log: the first line must be %s" % ",".join(RMM_HEADER))
    out = EventStream(name, "rmm-log", scale)
    for row in rows:
        line = rows.line_num
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(RMM_HEADER):
            raise TraceError("line %d: %d fields, an RMM log has %d" % (line, len(row), len(RMM_HEADER)))
        thread, _time, action, pointer, size, stream = (c.strip() for c in row)
        parse_int(thread, 10, "thread id", line)
        if action == "allocate failure":
            out.skip()
            continue
        if action not in ("allocate", "free"):
            raise TraceError("line %d: unknown action %r (RMM writes allocate, free, allocate failure)" % (line, action))
        ptr = 0 if pointer == "(nil)" else parse_int(pointer, 16, "pointer", line)
        nbytes = parse_int(size, 10, "size", line)
        if nbytes < 0:
            raise TraceError("line %d: negative size" % line)
        stream_id = 0 if stream in ("(nil)", "") else parse_int(stream, 16, "stream", line)
        if action == "allocate":
            out.alloc(ptr, nbytes, stream_id)
        else:
            out.free(ptr)
    return out


# --- minimalloc problems -------------------------------------------------------


def convert_minimalloc(text, name, scale):
    rows = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(rows, [])]
    if header[:4] != ["id", "lower", "upper", "size"]:
        raise TraceError("not a minimalloc problem: the first line must start with id,lower,upper,size")
    points = []  # (time, 0 = free / 1 = alloc, order, id, size)
    seen = set()
    for order, row in enumerate(rows):
        line = rows.line_num
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) < 4:
            raise TraceError("line %d: %d fields, need id,lower,upper,size" % (line, len(row)))
        buf = row[0].strip()
        lower, upper, size = (parse_int(c.strip(), 10, what, line) for c, what in zip(row[1:4], ("lower", "upper", "size")))
        if buf in seen:
            raise TraceError("line %d: buffer id %r given twice" % (line, buf))
        seen.add(buf)
        if lower >= upper or size < 0:
            raise TraceError("line %d: a buffer must live from lower < upper with size >= 0" % line)
        points.append((lower, 1, order, buf, size))
        points.append((upper, 0, order, buf, size))
    if not points:
        raise TraceError("the problem has no buffers")
    points.sort()
    out = EventStream(name, "minimalloc", scale)
    for _time, kind, _order, buf, size in points:
        if kind == 1:
            out.alloc(buf, size)
        else:
            out.free(buf)
    return out


# --- main ------------------------------------------------------------------------


def detect(data):
    if data[:1] == b"\x80":  # pickle protocol 2 and later
        return "pytorch"
    first = data.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0].strip()
    if first.startswith(b"Thread,"):
        return "rmm"
    if first.startswith(b"id,lower,upper,size"):
        return "minimalloc"
    raise TraceError("unknown format: not a pickle, an RMM log or a minimalloc CSV (use --format)")


def gunzip(data):
    """data, uncompressed when it is gzip (its magic bytes 1f 8b)."""
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, ValueError) as e:
        raise TraceError("a broken gzip file (%s)" % e)


def convert(data, fmt, name, scale=1, device=None):
    data = gunzip(data)
    if fmt == "auto":
        fmt = detect(data)
    if fmt == "pytorch":
        return convert_pytorch(data, name, scale, device)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TraceError("not UTF-8 text, so not a %s CSV" % fmt)
    try:
        if fmt == "rmm":
            return convert_rmm(text, name, scale)
        return convert_minimalloc(text, name, scale)
    except csv.Error as e:
        raise TraceError("malformed CSV: %s" % e)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("--format", choices=["auto", "pytorch", "rmm", "minimalloc"], default="auto")
    p.add_argument("--device", type=int, help="pytorch: the device to convert (default: the one with most events)")
    p.add_argument("--scale", type=int, default=1, help="multiply every size by this (default 1)")
    p.add_argument("--name", help="the trace's name (default: the file's stem)")
    p.add_argument("-o", "--output", help="write here instead of stdout")
    args = p.parse_args(argv)
    if args.scale < 1:
        p.error("--scale must be >= 1")
    name = " ".join((args.name or os.path.basename(args.trace).split(".")[0]).split())  # one line
    try:
        with open(args.trace, "rb") as f:
            data = f.read()
        stream = convert(data, args.format, name, args.scale, args.device)
    except (TraceError, OSError) as e:
        print("trace_events: %s: %s" % (args.trace, e), file=sys.stderr)
        return 1
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            stream.write(f)
    else:
        stream.write(sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
