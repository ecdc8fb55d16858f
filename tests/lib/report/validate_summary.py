#!/usr/bin/python3
"""Validates a gpuslack JSON summary against docs/summary.schema.json.

usage:
  validate_summary.py SCHEMA SUMMARY
      exit 0 if SUMMARY is strict JSON (no NaN/Infinity, no duplicate keys)
      and valid under SCHEMA (JSON Schema 2020-12); else exit 1 with why.
  validate_summary.py --expect-invalid SCHEMA SUMMARY
      proves the schema can fail: SUMMARY must be valid, and each of a set
      of broken copies of it (wrong schema_version, an unknown field at
      several levels, a missing field, a negative share, ...) must be
      rejected; exit 1 naming any broken copy that was accepted.

Needs the jsonschema module (Debian: python3-jsonschema).
"""
import copy
import json
import sys

try:
    from jsonschema import Draft202012Validator
except ImportError:
    print("validate_summary.py: the jsonschema module is missing "
          "(apt-get install python3-jsonschema)", file=sys.stderr)
    sys.exit(1)


def strict_load(path):
    def no_constants(name):
        raise ValueError(f"{name} is not JSON")

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        dup = {k for k in keys if keys.count(k) > 1}
        if dup:
            raise ValueError(f"duplicate keys: {sorted(dup)}")
        return dict(pairs)

    with open(path, encoding="utf-8", errors="strict") as f:
        return json.load(f, parse_constant=no_constants, object_pairs_hook=no_duplicates)


def errors_of(validator, doc):
    return sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))


def describe(error):
    where = "/".join(str(p) for p in error.absolute_path) or "(top)"
    return f"{where}: {error.message}"


def broken_copies(doc):
    """(what was broken, the broken document) for each way of breaking it."""
    def edit(what, change):
        d = copy.deepcopy(doc)
        change(d)
        return what, d

    return [
        edit("schema_version 2", lambda d: d.update(schema_version=2)),
        edit("an unknown top-level field", lambda d: d.update(surprise=1)),
        edit("a missing wall_s", lambda d: d.pop("wall_s")),
        edit("a negative lost_share", lambda d: d.update(lost_share=-0.5)),
        edit("seconds as a string", lambda d: d.update(lost_s="1.0")),
        edit("an unknown field in a category", lambda d: d["categories"]["allocation"].update(extra=0)),
        edit("a missing category", lambda d: d["categories"].pop("other")),
        edit("an unknown category", lambda d: d["categories"].update(idle={"seconds": 0, "share": 0})),
        edit("an unknown field in worst_thread", lambda d: d["worst_thread"].update(extra=0)),
        edit("an unknown field in a thread", lambda d: d["threads"][0].update(extra=0)),
        edit("an unknown field in a call", lambda d: d["calls"][0].update(extra=0)),
        edit("a fractional count", lambda d: d["calls"][0].update(count=1.5)),
        edit("an unknown call category", lambda d: d["calls"][0].update(category="copies")),
        edit("an unknown copy kind", lambda d: d["copies"][0].update(kind="sideways")),
        edit("an unknown field in a copy", lambda d: d["copies"][0].update(extra=0)),
        edit("a number as a frame", lambda d: d["call_sites"][0]["frames"].append(1)),
        edit("an unknown field in a call site", lambda d: d["call_sites"][0].update(extra=0)),
        edit("a rank below -1", lambda d: d.update(rank=-2)),
        edit("an unknown closeness", lambda d: d["topology"]["affinity"][0].update(closeness="next_door")),
        edit("a link figure with no source", lambda d: d["topology"]["links"].update(intra_from="450")),
        edit("an unknown field in a topology NIC", lambda d: d["topology"]["nics"][0].update(extra=0)),
        edit("a negative inter_gbps", lambda d: d["topology"]["links"].update(inter_gbps=-1)),
        edit("an unknown field in pinned", lambda d: d["pinned"].update(extra=0)),
        edit("a missing field in pinned", lambda d: d["pinned"].pop("cap_hits")),
        edit("negative pinned bytes", lambda d: d["pinned"].update(pinned=-1)),
    ] + ([
        edit("an unknown field in staging", lambda d: d["staging"].update(extra=0)),
        edit("a negative staged H2D count", lambda d: d["staging"]["h2d"].update(staged=-1)),
        edit("a number as a pageable site frame", lambda d: d["staging"]["sites"][0]["frames"].append(1)),
    ] if doc.get("staging") and doc["staging"]["sites"] else [])


def main(argv):
    expect_invalid = len(argv) > 1 and argv[1] == "--expect-invalid"
    args = argv[2:] if expect_invalid else argv[1:]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    schema_path, summary_path = args
    try:
        schema = strict_load(schema_path)
        Draft202012Validator.check_schema(schema)
        doc = strict_load(summary_path)
    except Exception as e:  # a bad schema or a file that is not strict JSON
        print(f"validate_summary.py: {e}", file=sys.stderr)
        return 1
    validator = Draft202012Validator(schema)

    errors = errors_of(validator, doc)
    if errors:
        for e in errors:
            print(f"{summary_path}: {describe(e)}", file=sys.stderr)
        return 1
    if not expect_invalid:
        print(f"{summary_path}: valid")
        return 0

    accepted = [what for what, d in broken_copies(doc) if not errors_of(validator, d)]
    for what in accepted:
        print(f"validate_summary.py: the schema accepted {what}", file=sys.stderr)
    if accepted:
        return 1
    print(f"{summary_path}: every broken copy was rejected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
