"""`repair-proxy report`: the recovery rate of each arm, read from a running proxy's /metrics.

A watched trip (a stuck failure) recovers when, within `WATCH_TURNS` turns, the failure
clears or changes; it does not when it stays the same or the run is handed back. Treated
conversations got the instructions; holdout conversations were only observed.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["RECOVERED", "ReportUnavailable", "fetch", "recovery_table"]

RECOVERED = frozenset({"cleared", "changed"})
_OUTCOMES = ("cleared", "changed", "unchanged", "handed_back")


class ReportUnavailable(Exception):
    """The metrics could not be read, said with the URL tried."""


HOW = "give a running proxy's metrics URL, e.g. http://127.0.0.1:8400/metrics"


def recovery_table(metrics_text: str, url: str = "") -> str:
    """The per-team, per-arm outcome counts and recovery rates, as a table (`url`: where the text
    came from, named when it is no Prometheus text)."""
    counts: dict[tuple[str, str, str], dict[str, float]] = defaultdict(lambda: dict.fromkeys(_OUTCOMES, 0.0))
    try:
        families = list(text_string_to_metric_families(metrics_text))
    except ValueError as exc:
        raise ReportUnavailable(f"{url or 'the text'} is no Prometheus metrics ({exc}); {HOW}") from None
    for family in families:
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
    """The text at `url`; `ReportUnavailable` naming the URL when it cannot be read."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return str(response.read().decode())
    except urllib.error.HTTPError as exc:
        raise ReportUnavailable(f"{url} answered {exc.code} {exc.reason}; {HOW}") from None
    except urllib.error.URLError as exc:
        raise ReportUnavailable(f"cannot read {url}: {exc.reason} (is the proxy running there?); {HOW}") from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:  # no scheme, a timeout, not text
        raise ReportUnavailable(f"cannot read {url}: {exc}; {HOW}") from None
