#!/usr/bin/env python3
"""How many published differences flip sign between two runs.

    scripts/delta-flips.py deltas  A.json B.json        # two `framebench deltas --json` files
    scripts/delta-flips.py criterion DIR_A DIR_B        # two criterion output folders

`deltas`: the paired design. A cell is published as a signed number only when its interval
leaves out "no change" (0 for logging and disk, 1.00 for vs-raw); a flip is a cell published as
a number in both runs with opposite signs. Cells published as `≈` in either run are counted apart.

`criterion`: the design before it. Each difference is the difference of two independent
criterion cells (`log=sink` − `log=off`, `io=disk` − `io=memory`, and raw's loopback time over
the framework's with the pre-encoded client), always printed as a signed number; a flip is a
cell whose sign differs between the two runs.

Prints one line per kind and a total; exits 0 (it reports, it does not judge).
"""
import json
import pathlib
import sys


def deltas(path):
    doc = json.loads(pathlib.Path(path).read_text())
    if doc.get("schema") != "framebench-deltas/1":
        sys.exit(f"{path}: schema {doc.get('schema')!r}, expected 'framebench-deltas/1'")
    out = {}
    for c in doc["cells"]:
        if c.get("error"):
            continue
        key = (c["kind"], c["framework"], c["scenario"])
        if c["kind"] == "vs-raw":
            e, none = c["ratio"], 1.0
        else:
            e, none = c["delta_ns"], 0.0
        separated = e["lo"] is not None and e["hi"] is not None and (e["lo"] > none or e["hi"] < none)
        out[key] = (1 if e["point"] > none else -1, separated)
    return out


def criterion(folder):
    est = {}
    for f in pathlib.Path(folder).glob("**/new/benchmark.json"):
        b = json.loads(f.read_text())
        e = json.loads((f.parent / "estimates.json").read_text())
        ns = (e.get("slope") or e["mean"])["point_estimate"]
        est[(b["group_id"], b["function_id"], b.get("value_str") or "")] = ns
    out = {}
    for (group, fw, value), ns in est.items():
        transport, _, scenario = group.partition("/")
        if transport == "in_process" and value == "log=off,io=memory":
            for kind, other in (("logging", "log=sink,io=memory"), ("disk", "log=off,io=disk")):
                with_ns = est.get((group, fw, other))
                if with_ns is not None:
                    out[(kind, fw, scenario)] = (1 if with_ns > ns else -1, True)
        if transport == "loopback" and value == "raw-client" and fw != "raw":
            raw = est.get((group, "raw", "raw-client"))
            if raw is not None:
                out[("vs-raw", fw, scenario)] = (1 if raw / ns > 1 else -1, True)
    return out


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("deltas", "criterion"):
        sys.exit("usage: scripts/delta-flips.py deltas A.json B.json | criterion DIR_A DIR_B")
    read = deltas if sys.argv[1] == "deltas" else criterion
    a, b = read(sys.argv[2]), read(sys.argv[3])
    both = sorted(set(a) & set(b))
    if not both:
        sys.exit("no cell is in both runs")
    total = {"cells": 0, "numbers": 0, "flips": 0, "approx": 0}
    for kind in ("logging", "disk", "vs-raw"):
        keys = [k for k in both if k[0] == kind]
        numbers = [k for k in keys if a[k][1] and b[k][1]]
        flips = [k for k in numbers if a[k][0] != b[k][0]]
        approx = len(keys) - len(numbers)
        for k in flips:
            print(f"  flips: {' '.join(k)}")
        print(f"{kind}: {len(keys)} cells in both runs, {len(numbers)} printed as numbers in both, "
              f"{len(flips)} flip sign, {approx} printed as ≈ in at least one run")
        for t, v in zip(total, (len(keys), len(numbers), len(flips), approx)):
            total[t] += v
    print(f"all: {total['cells']} cells, {total['numbers']} numbers in both runs, "
          f"{total['flips']} flip sign, {total['approx']} ≈ in at least one")


main()
