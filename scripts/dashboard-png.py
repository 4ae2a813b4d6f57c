#!/usr/bin/env python3
"""Draws deploy/grafana/sluice.dashboard.json to deploy/grafana/dashboard.png:
each panel at its gridPos with its title, rows as bands.

With --prometheus URL, each panel shows its queries' data over the last
--minutes, queried from that Prometheus the way Grafana would (template
variables: $__rate_interval as --rate-interval, $source, $partner,
$namespace and $job as .*): time series as lines, stats as their last
value, state timelines as steps. scripts/dashboard-demo.sh runs sluice under load with a Prometheus
from Debian's packages and calls this. Without it, each panel lists its
queries. Grafana itself is not needed.

    pip install matplotlib && python3 scripts/dashboard-png.py [--prometheus URL]
"""
import argparse
import json
import math
import os
import re
import textwrap
import time
import urllib.parse
import urllib.request

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser()
ap.add_argument("src", nargs="?", default=os.path.join(root, "deploy/grafana/sluice.dashboard.json"))
ap.add_argument("dst", nargs="?", default=os.path.join(root, "deploy/grafana/dashboard.png"))
ap.add_argument("--prometheus", help="base URL of a Prometheus to query, e.g. http://127.0.0.1:9099")
ap.add_argument("--minutes", type=float, default=5)
ap.add_argument("--rate-interval", default="30s")
args = ap.parse_args()
dash = json.load(open(args.src))

COL_W, ROW_H = 1.0, 0.62  # inches per grid column and grid row
panels = dash["panels"]
height = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
fig = plt.figure(figsize=(24 * COL_W, height * ROW_H), dpi=80)
ax = fig.add_axes([0, 0, 1, 1])
ax.set_xlim(0, 24)
ax.set_ylim(height, 0)
ax.axis("off")
colors = {"timeseries": "#e8f1fb", "stat": "#eaf7ea", "state-timeline": "#fdf3e1"}
end = time.time()
start = end - args.minutes * 60
step = max(2, int(args.minutes * 60 / 150))


def query(expr):
    expr = (expr.replace("$__rate_interval", args.rate_interval)
            .replace('"$source"', '".*"').replace('"$partner"', '".*"')
            .replace('"$namespace"', '".*"').replace('"$job"', '".*"'))
    q = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
    with urllib.request.urlopen(args.prometheus + "/api/v1/query_range?" + q, timeout=30) as r:
        body = json.load(r)
    return body["data"]["result"]


def legend(fmt, metric):
    text = re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: metric.get(m.group(1), ""), fmt or "")
    return " ".join(text.split()) or ",".join(f"{k}={v}" for k, v in metric.items() if k != "__name__")


def human(v, unit):
    if v is None or math.isnan(v):
        return "no data"
    if unit == "percentunit":
        return f"{100 * v:.2f}%"
    if unit == "bytes":
        for u in ["B", "KiB", "MiB", "GiB"]:
            if abs(v) < 1024:
                return f"{v:.1f} {u}"
            v /= 1024
        return f"{v:.1f} TiB"
    if unit == "d":
        return f"{v:.0f} days"
    if unit == "s":
        return f"{v * 1000:.0f} ms" if v < 1 else f"{v:.1f} s"
    suffix = {"ops": "/s", "reqps": " req/s"}.get(unit, "")
    for scale, name in [(1e6, "M"), (1e3, "k")]:
        if abs(v) >= scale:
            return f"{v / scale:.3g}{name}{suffix}"
    return f"{v:.3g}{suffix}"


def draw_data(p, x, y, w, h):
    # The panel's plotting area, in figure coordinates (y grows upwards).
    left, right = (x + 1.1) / 24, (x + w - 0.3) / 24
    top, bottom = 1 - (y + 1.05) / height, 1 - (y + h - 0.55) / height
    unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit", "short")
    series = []
    for t in p.get("targets", []):
        for s in query(t["expr"]):
            ts = [float(a) for a, _ in s["values"]]
            vs = [float(b) for _, b in s["values"]]
            series.append((legend(t.get("legendFormat"), s["metric"]), ts, vs))
    if p["type"] == "stat":
        last = series[0][2][-1] if series else None
        ax.text(x + w / 2, y + h / 2 + 0.3, human(last, unit), fontsize=30, weight="bold",
                ha="center", va="center", color="#1f6f3f")
        return
    # The busiest series first: the legend has room for eight.
    series.sort(key=lambda s: -sum(abs(v) for v in s[2] if not math.isnan(v)))
    sub = fig.add_axes([left, bottom, right - left, top - bottom])
    sub.set_facecolor("white")
    if not series:
        sub.text(0.5, 0.5, "no data", ha="center", va="center", transform=sub.transAxes, color="#888")
    for name, ts, vs in series[:8]:
        ts = [(t - end) / 60 for t in ts]
        if p["type"] == "state-timeline":
            sub.step(ts, vs, where="post", label=name, lw=1.6)
        else:
            sub.plot(ts, vs, label=name, lw=1.4)
    sub.set_xlim(-args.minutes, 0)
    sub.tick_params(labelsize=8)
    sub.set_xlabel("minutes", fontsize=8, labelpad=1)
    sub.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: human(v, unit)))
    if series:
        sub.legend(fontsize=7, loc="upper left", framealpha=0.7, ncol=2 if len(series) > 4 else 1)


for p in panels:
    g = p["gridPos"]
    x, y, w, h = g["x"], g["y"], g["w"], g["h"]
    if p["type"] == "row":
        ax.add_patch(Rectangle((0, y), 24, h, color="#33475b"))
        ax.text(0.2, y + h / 2, p["title"], color="white", fontsize=15, weight="bold", va="center")
        continue
    pad = 0.08
    ax.add_patch(Rectangle((x + pad, y + pad), w - 2 * pad, h - 2 * pad,
                           facecolor=colors.get(p["type"], "#f2f2f2"), edgecolor="#7a8a99", lw=1.2))
    ax.text(x + 0.25, y + 0.55, p["title"], fontsize=14, weight="bold", va="center", parse_math=False)
    ax.text(x + w - 0.25, y + 0.55, p["type"], fontsize=9, color="#555", va="center", ha="right", style="italic")
    if args.prometheus:
        draw_data(p, x, y, w, h)
        continue
    chars = int(w * 8.4)
    lines = []
    for t in p.get("targets", []):
        lines += textwrap.wrap(t["refId"] + ": " + t["expr"], chars, subsequent_indent="   ")
    max_lines = int((h - 1.1) / 0.42)
    if len(lines) > max_lines:
        lines = lines[: max_lines - 1] + ["…"]
    for i, line in enumerate(lines):
        ax.text(x + 0.25, y + 1.2 + i * 0.42, line, fontsize=10, family="monospace", va="center", color="#223", parse_math=False)

fig.savefig(args.dst)
print(args.dst)
