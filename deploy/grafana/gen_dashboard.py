#!/usr/bin/env python3
"""Writes sluice.dashboard.json: one row per tier. Edit here, then run
python3 deploy/grafana/gen_dashboard.py and scripts/dashboard-png.py.

Every selector of a sluice metric in a panel gets the filters on the
namespace and job variables (scope()), so that two installs scraped by one
Prometheus do not mix; deploy/observability's TestScoped checks it."""
import json, os, re

DS = {"type": "prometheus", "uid": "${datasource}"}
panels = []
pid = [0]
y = [0]


def nid():
    pid[0] += 1
    return pid[0]


def row(title):
    panels.append({"type": "row", "title": title, "id": nid(), "collapsed": False,
                   "gridPos": {"h": 1, "w": 24, "x": 0, "y": y[0]}, "panels": []})
    y[0] += 1


SCOPE = 'namespace=~"$namespace",job=~"$job"'
SELECTOR = re.compile(r'\b(sluice[_:][A-Za-z0-9_:]*)(\{([^}]*)\})?')


def scope(expr):
    """expr with every sluice selector filtered on $namespace and $job."""
    def one(m):
        inner = m.group(3)
        return m.group(1) + "{" + SCOPE + ("," + inner if inner else "") + "}"
    return SELECTOR.sub(one, expr)


def panel(title, kind, targets, x, w, h=8, unit=None, desc=""):
    p = {"type": kind, "title": title, "id": nid(), "datasource": DS, "description": desc,
         "gridPos": {"h": h, "w": w, "x": x, "y": y[0]},
         "targets": [{"refId": chr(65 + i), "datasource": DS, "expr": scope(e), "legendFormat": l}
                     for i, (e, l) in enumerate(targets)],
         "fieldConfig": {"defaults": {"unit": unit or "short"}, "overrides": []},
         "options": {}}
    if kind == "timeseries":
        p["options"] = {"legend": {"displayMode": "list", "placement": "bottom"}, "tooltip": {"mode": "multi"}}
    panels.append(p)


def next_line(h=8):
    y[0] += h


RI = "$__rate_interval"

row("SLOs: error budget burn rate (1 spends the 30-day budget in 30 days)")
panel("Ingest (99.9%)", "timeseries",
      [(f"sluice:ingest_errors:ratio_rate{w} / 0.001", f"{w} {{{{job}}}}") for w in ("1h", "6h", "3d")], 0, 8,
      desc="Alerts page at 14.4 over 1h and 6 over 6h, open a ticket at 3 over 1d and 1 over 3d: docs/alerts.md.")
panel("End-to-end latency (99% within 2m)", "timeseries",
      [(f"sluice:consumer_end_to_end_slow:ratio_rate{w} / 0.01", f"{w} {{{{job}}}}") for w in ("1h", "6h", "3d")], 8, 8)
panel("Delivery (99.5% not dead-lettered)", "timeseries",
      [(f"sluice:consumer_dead_letter:ratio_rate{w} / 0.005", f"{w} {{{{job}}}}") for w in ("1h", "6h", "3d")], 16, 8)
next_line()

row("Edge: gateway")
panel("Events by outcome and reason", "timeseries",
      [(f'sum by (outcome, reason) (rate(sluice_events_total{{source=~"$source"}}[{RI}]))', "{{outcome}} {{reason}}")],
      0, 8, unit="ops")
panel("Requests by transport and result", "timeseries",
      [(f"sum by (transport, result) (rate(sluice_requests_total[{RI}]))", "{{transport}} {{result}}")],
      8, 8, unit="reqps")
panel("Request latency p50 / p99", "timeseries",
      [(f"histogram_quantile(0.5, sum by (le, transport) (rate(sluice_request_duration_seconds_bucket[{RI}])))", "p50 {{transport}}"),
       (f"histogram_quantile(0.99, sum by (le, transport) (rate(sluice_request_duration_seconds_bucket[{RI}])))", "p99 {{transport}}")],
      16, 8, unit="s")
next_line()
panel("Events taken, 5m (SLO 99.9%)", "stat", [("1 - sluice:ingest_errors:ratio_rate5m", "{{job}}")], 0, 4, unit="percentunit",
      desc="ACCEPTED or DUPLICATE, of those and BUFFER_FULL or UNAVAILABLE: docs/alerts.md#slos.")
panel("Admission mode (0 DIRECT, 1 SPOOLING)", "state-timeline",
      [("sluice_admission_mode", "{{instance}}")], 4, 6)
panel("Spool bytes vs cap", "timeseries",
      [("sluice_spool_bytes", "bytes {{instance}}"), ("sluice_spool_max_bytes", "cap {{instance}}")], 10, 7, unit="bytes")
panel("Spool records, spooled, drained, BUFFER_FULL", "timeseries",
      [("sluice_spool_records", "in spool {{instance}}"),
       (f"rate(sluice_admission_spooled_records_total[{RI}])", "spooled/s {{instance}}"),
       (f"rate(sluice_spool_drained_records_total[{RI}])", "drained/s {{instance}}"),
       (f"rate(sluice_admission_buffer_full_records_total[{RI}])", "BUFFER_FULL/s {{instance}}")],
      17, 7)
next_line()

row("Per source (one series per configured source; pick them with $source)")
panel("Events by source and outcome", "timeseries",
      [(f'sum by (source, outcome) (rate(sluice_events_total{{source=~"$source"}}[{RI}]))', "{{source}} {{outcome}}")],
      0, 6, unit="ops")
panel("Refusals by source and reason", "timeseries",
      [(f'sum by (source, reason) (rate(sluice_events_total{{source=~"$source",outcome="REJECTED"}}[{RI}]))', "{{source}} {{reason}}")],
      6, 6, unit="ops",
      desc="RATE_LIMITED: over its events/s, bytes/s, concurrency or memory share; BUFFER_FULL: over its spool share (docs: README, Per-source limits).")
panel("Bytes received by source", "timeseries",
      [(f'sum by (source) (rate(sluice_source_received_bytes_total{{source=~"$source"}}[{RI}]))', "{{source}}")],
      12, 6, unit="Bps")
panel("DLQ backlog by source (consumer's drain pass)", "timeseries",
      [('sum by (source) (sluice_consumer_dlq_backlog{source=~"$source"})', "{{source}}")], 18, 6,
      desc="DLQ records the drain pass in progress has read and not finished, by source; the drain takes sources in turn.")
next_line()
panel("Request memory held by source", "timeseries",
      [('sum by (source) (sluice_source_request_memory_bytes{source=~"$source"})', "{{source}}")], 0, 6, unit="bytes")
panel("Requests in flight and streams by source", "timeseries",
      [('sum by (source) (sluice_source_requests_in_flight{source=~"$source"})', "requests {{source}}"),
       ('sum by (source) (sluice_source_streams{source=~"$source"})', "streams {{source}}")], 6, 6)
panel("Spool bytes held by source", "timeseries",
      [('sum by (source) (sluice_source_spool_bytes{source=~"$source"})', "{{source}}"),
       ("max(sluice_spool_max_bytes)", "spool cap (per replica)")], 12, 6, unit="bytes")
panel("Gateway replicas seen (rates enforced at configured / N)", "timeseries",
      [("sluice_gateway_replicas", "{{instance}}")], 18, 6,
      desc="Each gateway's count of live gateways, from the cluster heartbeat topic; 1 when cluster.heartbeat_topic is off.")
next_line()

row("Kafka: produce")
panel("Produce latency p50 / p99 (acks=all)", "timeseries",
      [(f"histogram_quantile(0.5, sum by (le) (rate(sluice_produce_latency_seconds_bucket[{RI}])))", "p50"),
       (f"histogram_quantile(0.99, sum by (le) (rate(sluice_produce_latency_seconds_bucket[{RI}])))", "p99")],
      0, 8, unit="s")
panel("Produced records by result", "timeseries",
      [(f"sum by (result) (rate(sluice_produce_records_total[{RI}]))", "{{result}}")], 8, 8, unit="ops")
panel("Produce errors by class; buffered records", "timeseries",
      [(f"sum by (class) (rate(sluice_produce_errors_total[{RI}]))", "errors {{class}}"),
       ("sum(sluice_producer_buffered_records)", "buffered")], 16, 8)
next_line()

row("Consumer")
panel("Lag by topic (source topics; DLQ backlog)", "timeseries",
      [("sluice:consumer_lag:sum_by_topic", "{{topic}}"),
       ("sluice:consumer_dlq_backlog:sum_by_topic", "backlog {{topic}}")], 0, 8)
panel("In flight", "timeseries", [("sum by (instance) (sluice_consumer_in_flight)", "{{instance}}")], 8, 4)
panel("Sink write latency p50 / p99", "timeseries",
      [(f"histogram_quantile(0.5, sum by (le, sink) (rate(sluice_sink_write_seconds_bucket[{RI}])))", "p50 {{sink}}"),
       (f"histogram_quantile(0.99, sum by (le, sink) (rate(sluice_sink_write_seconds_bucket[{RI}])))", "p99 {{sink}}")],
      12, 6, unit="s")
panel("End-to-end p95 (SLO: 99% within 2m)", "timeseries",
      [("sluice:consumer_end_to_end_seconds:p95_5m", "p95 direct"),
       (f'histogram_quantile(0.95, sum by (le) (rate(sluice_consumer_end_to_end_seconds_bucket{{route="dlq"}}[{RI}])))', "p95 drained from DLQ")],
      18, 6, unit="s")
next_line()
panel("Breaker state (0 closed, 1 open, 2 half_open)", "state-timeline",
      [("sluice_sink_circuit_state", "{{sink}} {{instance}}")], 0, 6)
panel("Mode", "state-timeline", [("sluice_consumer_mode == 1", "{{mode}} {{instance}}")], 6, 6)
panel("Finished by outcome; sink errors", "timeseries",
      [(f"sum by (outcome) (rate(sluice_consumer_events_total[{RI}]))", "{{outcome}}"),
       (f"sum by (class) (rate(sluice_sink_errors_total[{RI}]))", "sink error {{class}}")], 12, 6, unit="ops")
panel("DLQ in vs drained; parked; DLQ ratio", "timeseries",
      [(f'sum(rate(sluice_consumer_dead_letters_total{{kind="dlq"}}[{RI}]))', "into DLQ"),
       (f"sum by (outcome) (rate(sluice_consumer_dlq_drained_total[{RI}]))", "drained {{outcome}}"),
       (f'sum by (topic) (rate(sluice_consumer_dead_letters_total{{kind="parked"}}[{RI}]))', "parked {{topic}}"),
       ("sluice:consumer_dead_letter:ratio_rate30m", "DLQ ratio (SLO 0.5%)")], 18, 6, unit="ops")
next_line()

row("Pollers")
panel("Requests by status", "timeseries",
      [(f'sum by (partner, status) (rate(sluice_poller_requests_total{{partner=~"$partner"}}[{RI}]))', "{{partner}} {{status}}")],
      0, 8, unit="reqps")
panel("Waits by cause (Retry-After, rate limits, backoff)", "timeseries",
      [(f'sum by (partner, cause) (rate(sluice_poller_wait_seconds_total{{partner=~"$partner",cause!="interval"}}[{RI}]))', "{{partner}} {{cause}}")],
      8, 8, unit="percentunit", desc="Seconds waited per second: 1 means waiting all the time.")
panel("Cursor age vs interval; up", "timeseries",
      [('max by (partner) (sluice_poller_cursor_age_seconds{partner=~"$partner"})', "age {{partner}}"),
       ('5 * max by (partner) (sluice_poller_interval_seconds{partner=~"$partner"})', "alert at 5 intervals {{partner}}"),
       ('max by (partner) (sluice_poller_up{partner=~"$partner"})', "up {{partner}}")],
      16, 8, unit="s")
next_line()
row("TLS")
panel("Days until certificate expiry", "stat",
      [("(sluice_tls_certificate_expiry_timestamp_seconds - time()) / 86400", "{{instance}} {{listener}}")], 0, 24, h=5, unit="d")

dash = {
    "title": "sluice",
    "uid": "sluice-overview",
    "schemaVersion": 39,
    "version": 1,
    "editable": True,
    "tags": ["sluice"],
    "time": {"from": "now-6h", "to": "now"},
    "refresh": "30s",
    "timezone": "",
    "annotations": {"list": []},
    "templating": {"list": [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source",
         "current": {}, "hide": 0, "refresh": 1, "options": []},
        # An install: a namespace (a ServiceMonitor's scrapes carry it), and
        # its jobs (the Services of its gateway and consumer). Every sluice
        # process exports process_start_time_seconds.
        {"name": "namespace", "type": "query", "datasource": DS, "label": "Namespace",
         "query": {"query": "label_values(sluice_requests_total, namespace)", "refId": "namespace"},
         "definition": "label_values(sluice_requests_total, namespace)",
         "includeAll": True, "multi": False, "allValue": ".*", "current": {}, "refresh": 2, "options": []},
        {"name": "job", "type": "query", "datasource": DS, "label": "Job",
         "query": {"query": 'label_values(process_start_time_seconds{namespace=~"$namespace"}, job)', "refId": "job"},
         "definition": 'label_values(process_start_time_seconds{namespace=~"$namespace"}, job)',
         "includeAll": True, "multi": True, "allValue": ".*", "current": {}, "refresh": 2, "options": []},
        {"name": "source", "type": "query", "datasource": DS, "label": "Source",
         "query": {"query": 'label_values(sluice_events_total{namespace=~"$namespace",job=~"$job"}, source)', "refId": "source"},
         "definition": 'label_values(sluice_events_total{namespace=~"$namespace",job=~"$job"}, source)',
         "includeAll": True, "multi": True, "allValue": ".*", "current": {}, "refresh": 2, "options": []},
        {"name": "partner", "type": "query", "datasource": DS, "label": "Partner",
         "query": {"query": 'label_values(sluice_poller_up{namespace=~"$namespace",job=~"$job"}, partner)', "refId": "partner"},
         "definition": 'label_values(sluice_poller_up{namespace=~"$namespace",job=~"$job"}, partner)',
         "includeAll": True, "multi": True, "allValue": ".*", "current": {}, "refresh": 2, "options": []},
    ]},
    "panels": panels,
}
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "sluice.dashboard.json"), "w") as f:
    json.dump(dash, f, indent=2)
    f.write("\n")
