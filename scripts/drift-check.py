#!/usr/bin/env python3
"""Compares two `framebench time --json` files of one build, a quiet run and a run that a busy
loop slowed from a third of the way in (scripts/drift.sh), and prints a Markdown report:

- every pair of frameworks that the quiet run separates (the median of their per-round ratio,
  within one scenario and variant, with its distribution-free 95 % interval lying beyond 5 % of
  1, the margin below which `framebench time` shares a rank) must
  not be separated the other way by the hogged run. That is the claim `framebench time` prints:
  it ranks two cells only where their rounds separate them, and gives them one shared rank
  otherwise, so a hogged run that merely fails to separate them (its point on the other side of
  1, its interval holding 1) puts them at one rank, which is no reversal. The table shows those
  too ("tied");
- each framework's ratio between two scenarios (the median over rounds of its per-round ratio)
  must differ between the two runs by less than 1.3x.

Exit 0 when both hold, 1 otherwise (each failure on a line), 2 on a file it cannot read.
"""
import itertools
import json
import math
import sys

LIMIT = 1.3
# The smallest difference `framebench time` ranks (src/timing/mod.rs, MARGIN): a pair whose
# ratio's interval reaches within 5 % of 1 shares a rank.
MARGIN = 1.05


def median_interval(xs):
    """The median with the distribution-free 95 % interval (crate::interval's rule)."""
    v = sorted(x for x in xs if not math.isnan(x))
    n = len(v)
    if n == 0:
        return None
    point = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    below, k_best = 0.0, None
    for k in range(1, (n + 1) // 2 + 1):
        below += math.comb(n, k - 1) * 0.5**n
        if below <= 0.025:
            k_best = k
        else:
            break
    if k_best is None:
        return point, -math.inf, math.inf
    return point, v[k_best - 1], v[n - k_best]


def cells(path):
    try:
        with open(path) as f:
            data = json.load(f)
        detail = data["detail"]
        assert data.get("schema") == "framebench-results/1" and data.get("command") == "time"
        return {(c["framework"], c["scenario"], c["variant"]): c["ns"] for c in detail["cells"]
                if c.get("ns")}
    except (OSError, ValueError, KeyError, TypeError, AssertionError) as e:
        print(f"drift-check: {path} is not a `framebench time --json` file ({e!r})", file=sys.stderr)
        sys.exit(2)


def ratio(a, b):
    return median_interval([x / y for x, y in zip(a, b)])


def main():
    if len(sys.argv) != 3:
        print("usage: drift-check.py QUIET.json HOGGED.json", file=sys.stderr)
        sys.exit(2)
    quiet, hogged = cells(sys.argv[1]), cells(sys.argv[2])
    failures = []
    groups = sorted({(s, v) for (_, s, v) in quiet})
    print("| scenario | pair | quiet: ratio (95 % interval) | hogged: ratio | order kept |")
    print("|---|---|---:|---:|---|")
    pairs = 0
    tied = 0
    for scenario, variant in groups:
        names = sorted(f for (f, s, v) in quiet if (s, v) == (scenario, variant))
        for a, b in itertools.combinations(names, 2):
            qa, qb = quiet[(a, scenario, variant)], quiet[(b, scenario, variant)]
            q = ratio(qa, qb)
            if q is None or not (q[1] > MARGIN or q[2] < 1 / MARGIN):
                continue
            pairs += 1
            if (a, scenario, variant) not in hogged or (b, scenario, variant) not in hogged:
                failures.append(f"{scenario}: {a} or {b} has no hogged rounds")
                continue
            h = ratio(hogged[(a, scenario, variant)], hogged[(b, scenario, variant)])
            separated = h[1] > MARGIN or h[2] < 1 / MARGIN
            holds = not separated or (h[0] > 1) == (q[0] > 1)
            verdict = "yes" if separated and holds else "tied" if holds else "**reversed**"
            tied += verdict == "tied"
            if not holds:
                failures.append(f"{scenario} {variant}: the quiet run puts {a} / {b} at "
                                f"{q[0]:.3f}, the hogged run at {h[0]:.3f} "
                                f"({h[1]:.3f}–{h[2]:.3f})")
            print(f"| {scenario} | {a} / {b} | {q[0]:.3f} ({q[1]:.3f}–{q[2]:.3f}) | "
                  f"{h[0]:.3f} ({h[1]:.3f}–{h[2]:.3f}) | {verdict} |")
    print(f"\n{pairs} pairs separated by the quiet run; "
          f"{sum('quiet run puts' in f for f in failures)} reversed by the hogged run, "
          f"{tied} tied by it.\n")
    print("| framework | scenarios | quiet ratio | hogged ratio | hogged / quiet | within 1.3x |")
    print("|---|---|---:|---:|---:|---|")
    frameworks = sorted({f for (f, _, _) in quiet})
    for f in frameworks:
        mine = sorted((s, v) for (g, s, v) in quiet if g == f)
        for (s1, v1), (s2, v2) in itertools.combinations(mine, 2):
            if v1 != v2 or (f, s1, v1) not in hogged or (f, s2, v2) not in hogged:
                continue
            q = ratio(quiet[(f, s1, v1)], quiet[(f, s2, v2)])[0]
            h = ratio(hogged[(f, s1, v1)], hogged[(f, s2, v2)])[0]
            moved = max(h / q, q / h)
            ok = moved < LIMIT
            if not ok:
                failures.append(f"{f}: {s1}/{s2} is {q:.3f} quiet and {h:.3f} hogged")
            print(f"| {f} | {s1} / {s2} | {q:.3f} | {h:.3f} | {h / q:.3f} | "
                  f"{'yes' if ok else '**no**'} |")
    print()
    for line in failures:
        print(f"FAIL {line}")
    if failures:
        sys.exit(1)
    print("drift-check: every separated pair keeps its order, every ratio between scenarios "
          "moved by less than 1.3x")


if __name__ == "__main__":
    main()
