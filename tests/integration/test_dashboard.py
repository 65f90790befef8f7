"""The Grafana dashboard in deploy/grafana asks only for metrics the proxy exports: every metric
name in its expressions (panels and variables) is in the real proxy's /metrics output."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp.test_utils import TestServer
from prometheus_client.parser import text_string_to_metric_families

DASHBOARDS = sorted((Path(__file__).resolve().parents[2] / "deploy" / "grafana").glob("*.json"))

_SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "summary": ("", "_count", "_sum", "_created"),
    "gauge": ("",),
    "info": ("_info",),
    "unknown": ("",),
}
_KEYWORDS = {"and", "or", "unless", "bool", "group_left", "group_right", "inf", "nan"}
_LABEL_VALUES = re.compile(r"label_values\(\s*(?:([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{[^}]*\})?\s*,)?\s*\w+\s*\)")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (functions, keywords, labels and numbers aside)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", " ", expr)
    expr = re.sub(r"\[[^\]]*\]", " ", expr)
    expr = re.sub(r"\b(?:offset|@)\s*-?\w+", " ", expr)
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    expr = re.sub(r"(?<![\w:])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", " ", expr)
    names = set()
    for found in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr):
        if expr[found.end() :].lstrip().startswith("(") or found.group().lower() in _KEYWORDS:
            continue
        names.add(found.group())
    return names


def expressions(dashboard: dict[str, Any]) -> list[str]:
    """Every panel target's `expr`, nested rows included."""

    def walk(panels: list[dict[str, Any]]) -> list[str]:
        found = []
        for panel in panels:
            found += [t["expr"] for t in panel.get("targets", ()) if t.get("expr")]
            found += walk(panel.get("panels", []))
        return found

    return walk(dashboard["panels"])


def variable_metrics(dashboard: dict[str, Any]) -> set[str]:
    names = set()
    for variable in dashboard.get("templating", {}).get("list", ()):
        query = variable.get("query")
        text = query.get("query", "") if isinstance(query, dict) else str(query or "")
        if variable.get("type") != "query":
            continue
        for found in _LABEL_VALUES.finditer(text):
            if found.group(1):
                names.add(found.group(1))
        if not _LABEL_VALUES.search(text):
            names |= metric_names(text)
    return names


async def exported(server: TestServer) -> set[str]:
    """Every sample name /metrics can carry: each family's, by its type (a labelled family with
    no samples yet still says its name and type)."""
    async with aiohttp.ClientSession() as client, client.get(str(server.make_url("/metrics"))) as response:
        text = await response.text()
    names = set()
    for family in text_string_to_metric_families(text):
        names |= {family.name + suffix for suffix in _SUFFIXES[family.type]}
        names |= {sample.name for sample in family.samples}
    return names


def test_the_name_reader_sees_what_an_expression_reads() -> None:
    expr = (
        'histogram_quantile(0.95, sum by (le, team) (rate(a_seconds_bucket{team=~"$team", x="y(z)"}[$__rate_interval])))'
        " / on (team) group_left b_total offset 5m > 1e-9 and c"
    )
    assert metric_names(expr) == {"a_seconds_bucket", "b_total", "c"}


def test_there_is_a_dashboard() -> None:
    assert [p.name for p in DASHBOARDS] == ["repair-proxy.json"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
async def test_every_metric_the_dashboard_reads_is_exported(proxy: TestServer, path: Path) -> None:
    dashboard = orjson.loads(path.read_bytes())
    exprs = expressions(dashboard)
    assert len(exprs) >= 10
    wanted = set().union(*(metric_names(e) for e in exprs)) | variable_metrics(dashboard)
    assert "repair_proxy_tokens_total" in wanted and "process_resident_memory_bytes" in wanted
    missing = wanted - await exported(proxy)
    assert missing == set(), f"{path.name} reads metrics the proxy does not export: {sorted(missing)}"


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
async def test_a_name_the_proxy_does_not_export_would_be_caught(proxy: TestServer, path: Path) -> None:
    dashboard = orjson.loads(path.read_bytes())
    dashboard["panels"][-1]["targets"][0]["expr"] = "rate(repair_proxy_tokens_used_total[5m])"
    wanted = set().union(*(metric_names(e) for e in expressions(dashboard)))
    assert wanted - await exported(proxy) == {"repair_proxy_tokens_used_total"}
