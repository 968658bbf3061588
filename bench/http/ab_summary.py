#!/usr/bin/env python3
"""Medians per (scenario, side) of the trials bench/http/ab.sh (sides old,
new) or bench/http/peer.sh (sides peer, storhd) ran, and the ratios
new/old (storhd/peer). Writes OUT/summary.json and prints a Markdown table.
  ab_summary.py OUT [BASE_SIDE NEW_SIDE]   (default: old new)"""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]
base, new = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else ("old", "new")
rows = {}
for path in sorted(glob.glob(os.path.join(out, "r*-*-*", "results.json"))):
    side = os.path.basename(os.path.dirname(path)).split("-")[1]
    doc = json.load(open(path))
    for sc in doc["scenarios"]:
        for t in sc["trials"]:
            api = t["api"]
            rows.setdefault((sc["name"], side), []).append({
                "rps": t["rps"],
                "cpu_us": api["cpu_us_per_request"],
                "sys_us": api.get("sys_us_per_request", 0),
                "ctxsw": api.get("ctxsw_per_request", 0),
                "pss_mib": api["pss_mib"],
                "p99_ms": t["latency_ms"]["p99"],
                "errors": t["errors"]["total"],
            })
keys = ["rps", "cpu_us", "sys_us", "ctxsw", "pss_mib", "p99_ms", "errors"]
summary = {}
for (name, side), ts in sorted(rows.items()):
    med = {k: statistics.median(t[k] for t in ts) for k in keys}
    med["trials"] = len(ts)
    summary.setdefault(name, {})[side] = med
print("| scenario | figure | %s | %s | %s/%s |" % (base, new, new, base))
print("|---|---|---:|---:|---:|")
for name, sides in summary.items():
    if base not in sides or new not in sides:
        continue
    ratios = {}
    for k in keys:
        o, n = sides[base][k], sides[new][k]
        ratios[k] = round(n / o, 3) if o else None
        r = "%.2f" % ratios[k] if ratios[k] is not None else "-"
        print("| %s | %s | %g | %g | %s |" % (name, k, o, n, r))
    sides["%s_over_%s" % (new, base)] = ratios
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
