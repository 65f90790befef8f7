"""Prometheus metrics, in a registry of the app's own (no process-global state), with the
process's own (memory, CPU, file descriptors, `python_info`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
    multiprocess,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

__all__ = ["CONTENT_TYPE_LATEST", "MODEL_LABELS", "Metrics", "ModelLabels", "WorkerProcesses"]

MODEL_LABELS = 20
"""Distinct models a worker labels its counts with; any model past them is counted as `other`."""
_LONGEST_MODEL = 128
"""A model name longer than this is counted as `other` too."""


class ModelLabels:
    """The `model` label: the models seen, the first `cap` of them by name, the rest `other`;
    `none` for a request that names none. Bounded, so no client can grow the series without end."""

    def __init__(self, cap: int = MODEL_LABELS) -> None:
        self._cap = cap
        self._seen: set[str] = set()

    def __call__(self, model: str | None) -> str:
        if not model:
            return "none"
        if model in self._seen:
            return model
        if len(self._seen) < self._cap and len(model) <= _LONGEST_MODEL:
            self._seen.add(model)
            return model
        return "other"


class WorkerProcesses(Collector):
    """With several workers: each worker's process metrics, labelled `worker` (prometheus-client's
    multiprocess mode adds up counters from files, but a process's memory and CPU are not in
    them). `workers` gives index -> pid of the set's workers, as the supervisor listed them."""

    def __init__(self, workers: Callable[[], Mapping[int, int]]) -> None:
        self._workers = workers

    def collect(self) -> Iterator[Metric]:
        try:
            workers = self._workers()
        except OSError:
            return
        families: dict[str, Metric] = {}
        for index, pid in sorted(workers.items()):
            process = ProcessCollector(pid=lambda pid=pid: pid, registry=None)  # type: ignore[misc]
            for family in process.collect():
                merged = families.setdefault(
                    family.name, Metric(family.name, family.documentation, family.type, family.unit)
                )
                for sample in family.samples:
                    merged.add_sample(sample.name, {**sample.labels, "worker": str(index)}, sample.value)
        yield from families.values()


_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


_LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


_COUNTERS: Mapping[str, tuple[str, str, tuple[str, ...]]] = {
    "requests": (
        "repair_proxy_requests",
        "Requests by route, status, team and model (the model the request names, bounded: see ModelLabels)",
        ("route", "status", "team", "model"),
    ),
    "tokens": (
        "repair_proxy_tokens",
        "Tokens the upstream's replies say they used (their usage), every attempt counted: input or output",
        ("kind", "model", "team"),
    ),
    "trips": (
        "repair_proxy_trips",
        "Patterns that fired (mode: act, or shadow: counted, nothing changed)",
        ("pattern", "action", "mode", "team"),
    ),
    "injected_tokens": ("repair_proxy_injected_tokens", "Tokens of new instructions placed", ("team",)),
    "gate_retries": (
        "repair_proxy_gate_retries",
        "Replies held by a gate (done, finish, action) and asked again",
        ("gate", "team"),
    ),
    "reply_outcomes": (
        "repair_proxy_reply_outcomes",
        "Replies passed after their gate's last try: complete_unverified, complete_failing, no_action",
        ("outcome", "team"),
    ),
    "salvaged": (
        "repair_proxy_salvaged",
        "Replies whose tool calls, written as text, became real calls",
        ("dialect", "team"),
    ),
    "handbacks": ("repair_proxy_handbacks", "Runs handed back as incomplete", ("reason", "team")),
    "analysis_failed": (
        "repair_proxy_analysis_failed",
        "Analyses that raised (request forwarded untouched)",
        ("team",),
    ),
    "analysis_abandoned": (
        "repair_proxy_analysis_abandoned",
        "Analyses given up past the analysis budget (request forwarded untouched)",
        ("team",),
    ),
    "trip_outcomes": (
        "repair_proxy_trip_outcomes",
        "What followed a watched trip, by arm (treated: instructions placed; holdout: only observed)",
        ("arm", "pattern", "outcome", "team"),
    ),
    "store_errors": ("repair_proxy_store_errors", "Verdict store operations that failed", ("team",)),
    "upstream_errors": (
        "repair_proxy_upstream_errors",
        "Requests the proxy answered with an error because the upstream failed, by code and cause",
        ("code", "cause", "team"),
    ),
    "loop_stalls": (
        "repair_proxy_event_loop_stalls",
        "Looks at the event loop 100 ms late or more, by the step that held it (unknown: none said)",
        ("step",),
    ),
}
"""Every counter: its attribute, its name, what it counts, its labels."""
_HISTOGRAMS: Mapping[str, tuple[str, str, tuple[str, ...], tuple[float, ...]]] = {
    "upstream_seconds": (
        "repair_proxy_upstream_seconds",
        "Time until the upstream's response headers",
        ("team",),
        _LATENCY_BUCKETS,
    ),
    "overhead_seconds": (
        "repair_proxy_overhead_seconds",
        "Wall time the proxy added to an analysed request: from its body in to its going upstream",
        ("team",),
        _LATENCY_BUCKETS,
    ),
    "loop_lag": (
        "repair_proxy_event_loop_lag_seconds",
        "How late the event loop ran what was due, looked at every 50 ms (every request waited as long)",
        (),
        _LAG_BUCKETS,
    ),
}
"""Every histogram: its attribute, its name, what it measures, its labels, its buckets (a request's
latencies by team; the event loop's lag, the worker's own: `runtime.stalls`)."""


class Metrics:
    """Every counter and histogram the proxy exports, labelled by team where it applies. With a
    `multiprocess_dir` (several workers), `/metrics` adds up every worker's values."""

    requests: Counter
    tokens: Counter
    trips: Counter
    injected_tokens: Counter
    gate_retries: Counter
    reply_outcomes: Counter
    salvaged: Counter
    handbacks: Counter
    analysis_failed: Counter
    analysis_abandoned: Counter
    trip_outcomes: Counter
    store_errors: Counter
    upstream_errors: Counter
    loop_stalls: Counter
    upstream_seconds: Histogram
    overhead_seconds: Histogram
    loop_lag: Histogram

    def __init__(
        self, multiprocess_dir: Path | None = None, workers: Callable[[], Mapping[int, int]] | None = None
    ) -> None:
        self._multiprocess_dir = multiprocess_dir
        self._workers = workers
        self.model_label = ModelLabels()
        self.registry = CollectorRegistry()
        r = self.registry
        if multiprocess_dir is None:
            ProcessCollector(registry=r)
            PlatformCollector(registry=r)
        for attribute, (name, documentation, labels) in _COUNTERS.items():
            setattr(self, attribute, Counter(name, documentation, labels, registry=r))
        for attribute, (name, documentation, labels, buckets) in _HISTOGRAMS.items():
            setattr(self, attribute, Histogram(name, documentation, labels, buckets=buckets, registry=r))
        self.store_up = Gauge(
            "repair_proxy_store_up",
            "1 while the verdict store's last operation worked (or there is none), 0 while it fails "
            "(requests go on without memory); with several workers, the lowest",
            registry=r,
            multiprocess_mode="livemin",
        )

    def render(self) -> bytes:
        if self._multiprocess_dir is None:
            return generate_latest(self.registry)
        every = CollectorRegistry()
        multiprocess.MultiProcessCollector(every, path=str(self._multiprocess_dir))  # type: ignore[no-untyped-call]
        PlatformCollector(registry=every)
        if self._workers is not None:
            every.register(WorkerProcesses(self._workers))
        return generate_latest(every)
