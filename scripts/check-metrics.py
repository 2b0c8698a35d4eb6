#!/usr/bin/env python3
"""Checks a /metrics scrape on stdin with a real Prometheus parser (prometheus_client's).

    curl -s http://127.0.0.1:8080/metrics | /tmp/promvenv/bin/python scripts/check-metrics.py

Needs `pip install prometheus-client` (in a venv: `python3 -m venv /tmp/promvenv &&
/tmp/promvenv/bin/pip install prometheus-client`). Fails (exit status 1, reasons on stderr) when
the text does not parse, a family lacks HELP or TYPE or appears twice, an expected family is
missing, or a histogram's buckets are not cumulative up to a `+Inf` bucket equal to `_count`.
The Swift test suite does not need this script; it is for checking a build by hand or in CI.
"""
import math
import sys
from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

# Names as written in the exposition, with their TYPE.
EXPECTED = {
    "exosphere_http_requests_total": "counter",
    "exosphere_http_request_duration_seconds": "histogram",
    "exosphere_http_requests_in_flight": "gauge",
    "exosphere_http_connections_open": "gauge",
    "exosphere_http_connections_accepted_total": "counter",
    "exosphere_http_workers": "gauge",
    "exosphere_http_worker_queue_length": "gauge",
    "exosphere_http_worker_rejected_total": "counter",
    "exosphere_db_pool_connections": "gauge",
    "exosphere_db_pool_size": "gauge",
    "exosphere_db_pool_waiting": "gauge",
    "exosphere_db_pool_connections_created_total": "counter",
    "exosphere_db_pool_connections_failed_total": "counter",
    "exosphere_db_pool_connections_timeouts_total": "counter",
    "exosphere_hashing_queue_length": "gauge",
    "exosphere_hashing_busy": "gauge",
    "exosphere_hashing_rejected_total": "counter",
    "exosphere_hashing_completed_total": "counter",
    "exosphere_build_info": "gauge",
    "process_resident_memory_bytes": "gauge",
    "process_cpu_seconds_total": "counter",
    "process_open_fds": "gauge",
    "process_start_time_seconds": "gauge",
}


def exposition_name(family):
    """The parser drops `_total` from counter family names; put it back to compare with the text."""
    if family.type == "counter" and not family.name.endswith("_total"):
        return family.name + "_total"
    return family.name


def check_histogram(family, errors):
    series = defaultdict(lambda: {"buckets": [], "sum": None, "count": None})
    for sample in family.samples:
        labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))
        if sample.name == family.name + "_bucket":
            series[labels]["buckets"].append((float(sample.labels["le"]), sample.value))
        elif sample.name == family.name + "_sum":
            series[labels]["sum"] = sample.value
        elif sample.name == family.name + "_count":
            series[labels]["count"] = sample.value
    for labels, parts in series.items():
        where = f"{family.name}{dict(labels)}"
        buckets = parts["buckets"]
        if [bound for bound, _ in buckets] != sorted(bound for bound, _ in buckets):
            errors.append(f"{where}: buckets out of order")
        if not buckets or not math.isinf(buckets[-1][0]):
            errors.append(f"{where}: no le=\"+Inf\" bucket")
            continue
        counts = [count for _, count in buckets]
        if counts != sorted(counts):
            errors.append(f"{where}: bucket counts are not cumulative: {counts}")
        if parts["count"] != buckets[-1][1]:
            errors.append(f"{where}: _count {parts['count']} differs from the +Inf bucket {buckets[-1][1]}")
        if parts["sum"] is None:
            errors.append(f"{where}: no _sum")


def main():
    text = sys.stdin.read()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as error:  # the parser raises ValueError, but any failure is a failed check
        print(f"check-metrics: the exposition does not parse: {error!r}", file=sys.stderr)
        return 1

    errors = []
    seen = {}
    for family in families:
        name = exposition_name(family)
        if name in seen:
            errors.append(f"{name}: the family appears twice (its samples are not together)")
        seen[name] = family.type
        if not family.documentation:
            errors.append(f"{name}: no # HELP")
        if family.type in ("unknown", "untyped"):
            errors.append(f"{name}: no # TYPE")
        if family.type == "histogram":
            check_histogram(family, errors)
        for sample in family.samples:
            route = sample.labels.get("route")
            if route is not None and route != "-" and not route.startswith("/"):
                errors.append(f"{sample.name}: route label {route!r} is neither a pattern nor \"-\"")
    for name, kind in EXPECTED.items():
        if name not in seen:
            errors.append(f"{name}: missing")
        elif seen[name] != kind:
            errors.append(f"{name}: TYPE {seen[name]}, expected {kind}")

    if errors:
        for error in errors:
            print(f"check-metrics: {error}", file=sys.stderr)
        return 1
    samples = sum(len(family.samples) for family in families)
    print(f"check-metrics: ok, {len(families)} families, {samples} samples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
