#!/usr/bin/env python3
"""Medians per (scenario, side) of the trials bench/http/ab.sh (sides old,
new) or bench/http/peer.sh (sides peer, storhd, limit) ran, and the ratios
new/old (storhd/peer, storhd/limit). Writes OUT/summary.json and
OUT/index.html (the same table) and prints a Markdown table.
  ab_summary.py OUT [BASE_SIDE NEW_SIDE [MORE_BASE_SIDES...]]   (default: old new)"""
import glob
import html
import json
import os
import statistics
import sys

out = sys.argv[1]
base, new = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else ("old", "new")
bases = [base] + sys.argv[4:]
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
names = {"rps": "req/s", "cpu_us": "server CPU per request (us)",
         "sys_us": "of it in the kernel (us)", "ctxsw": "context switches per request",
         "pss_mib": "PSS (MiB)", "p99_ms": "p99 (ms)", "errors": "errors"}
head = ["scenario", "figure", new] + bases + ["%s/%s" % (new, b) for b in bases]
lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
cells = []
for name, sides in summary.items():
    if new not in sides or not any(b in sides for b in bases):
        continue
    for b in bases:
        if b in sides:
            sides["%s_over_%s" % (new, b)] = {
                k: (round(sides[new][k] / sides[b][k], 3) if sides[b][k] else None)
                for k in keys}
    for k in keys:
        row = [name, names[k], "%g" % sides[new][k]]
        row += ["%g" % sides[b][k] if b in sides else "-" for b in bases]
        for b in bases:
            r = sides.get("%s_over_%s" % (new, b), {}).get(k)
            row.append("%.2f" % r if r is not None else "-")
        cells.append(row)
        lines.append("| " + " | ".join(row) + " |")
print("\n".join(lines))
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
cmd = ""
if os.path.exists(os.path.join(out, "binaries.txt")):
    cmd = open(os.path.join(out, "binaries.txt")).read()
with open(os.path.join(out, "index.html"), "w") as f:
    f.write("<!doctype html><meta charset=utf-8><title>storhd side by side</title>"
            "<style>body{font-family:sans-serif}td,th{padding:2px 8px;border-bottom:1px solid #ddd}"
            "td{text-align:right}td:first-child,td:nth-child(2){text-align:left}</style>"
            "<h1>storhd side by side</h1><p>Medians of the trials in this directory "
            "(each trial's own report is in r*-SIDE-SCENARIO/index.html); "
            "<a href=summary.json>summary.json</a>.</p><pre>%s</pre><table><tr>%s</tr>"
            % (html.escape(cmd), "".join("<th>%s</th>" % html.escape(h) for h in head)))
    for row in cells:
        f.write("<tr>%s</tr>" % "".join("<td>%s</td>" % html.escape(c) for c in row))
    f.write("</table>\n")
