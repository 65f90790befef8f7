"""`repair-proxy report`: the recovery rate of each arm, read from a running proxy's /metrics.

A watched trip (a stuck failure) recovers when, within `WATCH_TURNS` turns, the failure
clears or changes; it does not when it stays the same or the run is handed back. Treated
conversations got the instructions; holdout conversations were only observed.
"""

from __future__ import annotations

import urllib.request
from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["RECOVERED", "recovery_table"]

RECOVERED = frozenset({"cleared", "changed"})
_OUTCOMES = ("cleared", "changed", "unchanged", "handed_back")


def recovery_table(metrics_text: str) -> str:
    """The per-team, per-arm outcome counts and recovery rates, as a table."""
    counts: dict[tuple[str, str, str], dict[str, float]] = defaultdict(lambda: dict.fromkeys(_OUTCOMES, 0.0))
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name == "repair_proxy_trip_outcomes_total":
                labels = sample.labels
                counts[(labels["team"], labels["pattern"], labels["arm"])][labels["outcome"]] += sample.value
    if not counts:
        return "no watched trips have settled yet"
    lines = [
        f"{'team':<12} {'pattern':<24} {'arm':<8} " + " ".join(f"{o:>11}" for o in _OUTCOMES) + f" {'recovered':>10}"
    ]
    for (team, pattern, arm), row in sorted(counts.items()):
        total = sum(row.values())
        rate = sum(row[o] for o in RECOVERED) / total if total else 0.0
        lines.append(
            f"{team:<12} {pattern:<24} {arm:<8} " + " ".join(f"{row[o]:>11.0f}" for o in _OUTCOMES) + f" {rate:>9.0%}"
        )
    return "\n".join(lines)


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode())
