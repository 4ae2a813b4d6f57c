#!/usr/bin/env python3
"""Draws the layout of deploy/grafana/sluice.dashboard.json to
deploy/grafana/dashboard.png: each panel at its gridPos with its title,
type and queries, rows as bands. Grafana itself is not needed.

    pip install matplotlib && python3 scripts/dashboard-png.py
"""
import json
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "deploy/grafana/sluice.dashboard.json")
dst = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "deploy/grafana/dashboard.png")
dash = json.load(open(src))

COL_W, ROW_H = 1.0, 0.62  # inches per grid column and grid row
panels = dash["panels"]
height = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
fig = plt.figure(figsize=(24 * COL_W, height * ROW_H), dpi=80)
ax = fig.add_axes([0, 0, 1, 1])
ax.set_xlim(0, 24)
ax.set_ylim(height, 0)
ax.axis("off")
colors = {"timeseries": "#e8f1fb", "stat": "#eaf7ea", "state-timeline": "#fdf3e1"}

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
    chars = int(w * 8.4)
    lines = []
    for t in p.get("targets", []):
        lines += textwrap.wrap(t["refId"] + ": " + t["expr"], chars, subsequent_indent="   ")
    max_lines = int((h - 1.1) / 0.42)
    if len(lines) > max_lines:
        lines = lines[: max_lines - 1] + ["…"]
    for i, line in enumerate(lines):
        ax.text(x + 0.25, y + 1.2 + i * 0.42, line, fontsize=10, family="monospace", va="center", color="#223", usetex=False, parse_math=False)

fig.savefig(dst)
print(dst)
