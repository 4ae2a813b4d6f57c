#!/usr/bin/env python3
"""Writes burnrate-<slo>.test.yaml, one file an SLO: promtool tests of
each window pair of the SLO burn-rate alerts (alerts.rules.yaml). Edit
here, then run python3 deploy/prometheus/tests/gen_burnrate.py;
.ci/steps/alerts.sh fails when a committed file differs from what this
writes.

Each case is a clean history, then minutes of errors at a multiple of the
SLO's error budget (the burn rate). For every rule (a long and a short
window over a burn rate) there is a case that fires it, one where its long
window burns but its short one has recovered, and one where only its short
window burns; the last two must not fire it. promtool compares the whole
set of alerts of the name, so a case also shows which other rules fire.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = "https://github.com/sluicehq/sluice/blob/main/docs/alerts.md#"

# (alert, long, short, burn, severity)
PAIRS = [("1h", "5m", "14.4", "critical"), ("6h", "30m", "6", "critical"),
         ("1d", "2h", "3", "warning"), ("3d", "6h", "1", "warning")]

# Each SLO: its alert, what the summary calls it, the description's
# template, its budget, events judged per minute (so that 1x of the budget
# is 2 bad events a minute), and the input series of good and bad events.
SLOS = [
    dict(name="ingest", alert="SluiceIngestErrorBudgetBurn", job="sluice-gateway",
         what="the ingest (99.9% of events taken)", per_min=2000,
         desc="Over the last {long} and the last {short}, more than {burn} times 0.1% of the events sources sent were refused by the gateway for its own reasons (BUFFER_FULL, UNAVAILABLE): at this rate the 30-day budget of the 99.9% ingest SLO lasts at most {lasts}. Client errors are not counted.",
         good=['sluice_events_total{{{l},source="checkout",type="t",outcome="ACCEPTED",reason=""}}'],
         bad=['sluice_events_total{{{l},source="checkout",type="t",outcome="REJECTED",reason="UNAVAILABLE"}}'],
         # Client errors are in neither side: as many MALFORMED as accepted.
         extra=[('sluice_events_total{{{l},source="checkout",type="t",outcome="REJECTED",reason="MALFORMED"}}', "judged")]),
    dict(name="latency", alert="SluiceEndToEndLatencyBudgetBurn", job="sluice-consumer",
         what="the end-to-end latency (99% within 2m)", per_min=200,
         desc="Over the last {long} and the last {short}, more than {burn} times 1% of the events written from their topics took more than 2 minutes from ingest to the sink: at this rate the 30-day budget of the 99% end-to-end SLO lasts at most {lasts}.",
         good=['sluice_consumer_end_to_end_seconds_bucket{{{l},route="direct",le="120"}}'],
         total=['sluice_consumer_end_to_end_seconds_count{{{l},route="direct"}}'],
         # Events drained from the DLQ are as old as their failures: not counted.
         extra=[('sluice_consumer_end_to_end_seconds_count{{{l},route="dlq"}}', "judged"),
                ('sluice_consumer_end_to_end_seconds_bucket{{{l},route="dlq",le="120"}}', "zero")]),
    dict(name="delivery", alert="SluiceDeliveryErrorBudgetBurn", job="sluice-consumer",
         what="the delivery (99.5% not dead-lettered)", per_min=400,
         desc="Over the last {long} and the last {short}, more than {burn} times 0.5% of the records the consumers finished from their source topics went to the DLQ or the parked topic: at this rate the 30-day budget of the 99.5% delivery SLO lasts at most {lasts}.",
         good=['sluice_consumer_events_total{{{l},outcome="written"}}'],
         bad=['sluice_consumer_events_total{{{l},outcome="dlq"}}'],
         # Drain passes that fail again are not new failures: as many
         # records drained back to the DLQ as written, on both sides.
         extra=[('sluice_consumer_events_total{{{l},outcome="parked"}}', "zero"),
                ('sluice_consumer_dlq_drained_total{{{l},outcome="dlq"}}', "judged"),
                ('sluice_consumer_dlq_drained_total{{{l},outcome="parked"}}', "zero"),
                ('sluice_consumer_events_total{{{l},outcome="dlq"}}', "judged_added")]),
]
# Samples every 2 minutes and rules evaluated every 10: a 5m window still
# holds 2 samples, and the file runs in a quarter of the time at 1m.
STEP = 2
LASTS = {"14.4": "about 2 days", "6": "5 days", "3": "10 days", "1": "30 days"}

# (title, clean minutes first, [(burn, minutes), ...], rules expected to fire)
CASES = [
    ("1h/5m at 14.4x: 35x for 30m fires it alone", 4320, [(35, 30)], ["1h"]),
    ("1h/5m: 35x for 30m, then 10m clean: 1h still burns, 5m does not", 4320, [(35, 30), (0, 10)], []),
    ("1h/5m: 35x for 10m: 5m burns, 1h does not", 4320, [(35, 10)], []),
    ("6h/30m at 6x: 8x for 5h fires it alone (1h is under 14.4x)", 4320, [(8, 300)], ["6h"]),
    ("6h/30m: 8x for 5h, then 30m clean: 6h still burns, 30m does not", 4320, [(8, 300), (0, 30)], []),
    ("6h/30m: 8x for 40m: 30m burns, 6h does not", 4320, [(8, 40)], []),
    ("1d/2h at 3x: 4x for 20h fires it; a day over 3x is always 3 days over 1x, so 3d/6h fires too", 4320, [(4, 1200)], ["1d", "3d"]),
    ("1d/2h: 4x for 20h, then 2h clean: 1d still burns, 2h does not (3d/6h still fires)", 4320, [(4, 1200), (0, 120)], ["3d"]),
    ("1d/2h: 4x for 150m: 2h burns, 1d does not", 4320, [(4, 150)], []),
    ("3d/6h at 1x: 1.5x for 3 days fires it alone", 0, [(1.5, 4320)], ["3d"]),
    ("3d/6h: 1.5x for 4000m, then 6h clean: 3d still burns, 6h does not", 0, [(1.5, 4000), (0, 360)], []),
    ("3d/6h: 2x for 400m: 6h burns, 3d does not", 4320, [(2, 400)], []),
]


def series(per_minute):
    """Expanding notation for a counter from 0 that grows by per_minute[i]
    in minute i, sampled every STEP minutes."""
    incs = [sum(per_minute[i:i + STEP]) for i in range(0, len(per_minute), STEP)]
    out, v, i = ["0"], 0, 0
    while i < len(incs):
        j = i
        while j < len(incs) and incs[j] == incs[i]:
            j += 1
        n, d = j - i, incs[i]
        out.append(f"{v + d}+{d}x{n - 1}" if n > 1 else f"{v + d}")
        v += d * n
        i = j
    return " ".join(out)


def profile(slo, clean, segs):
    unit = 2  # bad events a minute at 1x: per_min is 2 / the budget
    bad = [0] * clean
    for burn, mins in segs:
        bad += [int(burn * unit)] * mins
    return bad


def install(slo, labels, bad):
    per = slo["per_min"]
    judged = [per] * len(bad)
    good = [per - b for b in bad]
    out = []
    for s in slo["good"]:
        out.append((s.format(l=labels), series(good)))
    for s in slo.get("bad", []):
        out.append((s.format(l=labels), series(bad)))
    for s in slo.get("total", []):
        out.append((s.format(l=labels), series(judged)))
    for s, kind in slo["extra"]:
        s = s.format(l=labels)
        if kind == "judged":
            out.append((s, series(judged)))
        elif kind == "zero":
            out.append((s, series([0] * len(bad))))
        elif kind == "judged_added":
            # the bad series again, with the drained records that failed again
            out = [(n, series([b + per for b in bad])) if n == s else (n, v) for n, v in out]
    return out


def expected(slo, ns, fired):
    alerts = []
    for long, short, burn, sev in PAIRS:
        if long not in fired:
            continue
        alerts.append(f"""          - exp_labels:
              severity: {sev}
              namespace: {ns}
              job: {slo["job"]}
              long_window: {long}
              short_window: {short}
            exp_annotations:
              summary: "{ns}/{slo["job"]}: {slo["what"]} SLO burns its error budget over {burn}x in {long} and {short}"
              description: "{slo["desc"].format(long=long, short=short, burn=burn, lasts=LASTS[burn])}"
              runbook_url: "{BASE}{slo["alert"].lower()}"
""")
    return "".join(alerts) if alerts else None


def case(slo, title, installs, fired_ns, fired):
    n = max(len(b) for _, b in installs)
    lines = [f"  # {slo['alert']}: {title}.\n", f"  - interval: {STEP}m\n    input_series:\n"]
    for labels, bad in installs:
        for name, values in install(slo, labels, bad):
            lines.append(f"      - series: '{name}'\n        values: '{values}'\n")
    exp = expected(slo, fired_ns, fired)
    lines.append(f"    alert_rule_test:\n      - eval_time: {n}m\n        alertname: {slo['alert']}\n")
    lines.append("        exp_alerts:\n" + exp if exp else "        exp_alerts: []\n")
    return "".join(lines) + "\n"


def main():
    # One file an SLO, so that CI runs them side by side (promtool
    # evaluates a file on one core).
    for slo in SLOS:
        name = f"burnrate-{slo['name']}.test.yaml"
        out = [f"# Generated by gen_burnrate.py; do not edit. promtool test rules\n",
               f"# tests/{name} (from deploy/prometheus).\n",
               "rule_files:\n  - ../recording.rules.yaml\n  - ../alerts.rules.yaml\n",
               "# Every 10 minutes: the windows are 5m to 3d, and the series run to 3\n",
               "# days and more.\nevaluation_interval: 10m\n",
               "group_eval_order:\n  - sluice-slo\n  - sluice-views\n  - sluice-slo-alerts\n  - sluice-operational-alerts\n\n",
               "tests:\n"]
        labels = f'namespace="sluice",job="{slo["job"]}",instance="a"'
        for title, clean, segs, fired in CASES:
            out.append(case(slo, title, [(labels, profile(slo, clean, segs))], "sluice", fired))
        # Two installs in one Prometheus: the one in namespace other takes
        # ten times the traffic without an error. Summed together, they
        # would burn under 14.4x; apart, the first fires alone.
        other = f'namespace="other",job="{slo["job"]}",instance="a"'
        busy = dict(slo, per_min=slo["per_min"] * 10)
        bad = profile(slo, 4320, [(35, 30)])
        mixed = install(slo, labels, bad) + install(busy, other, [0] * len(bad))
        lines = [f"  # {slo['alert']}: two installs in one Prometheus alert apart.\n",
                 f"  - interval: {STEP}m\n    input_series:\n"]
        for n, values in mixed:
            lines.append(f"      - series: '{n}'\n        values: '{values}'\n")
        lines.append(f"    alert_rule_test:\n      - eval_time: {len(bad)}m\n        alertname: {slo['alert']}\n")
        lines.append("        exp_alerts:\n" + expected(slo, "sluice", ["1h"]) + "\n")
        out.append("".join(lines))
        with open(os.path.join(HERE, name), "w") as f:
            f.write("".join(out).rstrip("\n") + "\n")

main()
