"""What the standard `OTEL_*` variables ask of the proxy, read without importing OpenTelemetry or
aiohttp: a supervisor of workers checks it once, before any worker starts (each worker would
otherwise refuse to start, and say so, once per worker), and `tracing.tracing_from_env` reads
it in every process that serves.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass

from proxy.settings.problems import ConfigError, ConfigProblem

__all__ = ["EXPORTER_NAMES", "TracesAsked", "not_installed", "traces_asked"]

EXPORTER_NAMES = ("otlp", "console")
"""`OTEL_TRACES_EXPORTER` values the proxy serves (the keys of `otel.EXPORTERS`)."""
_SDK = ("opentelemetry.trace", "opentelemetry.sdk.trace", "opentelemetry.sdk.resources")
_OTLP = "opentelemetry.exporter.otlp.proto.http.trace_exporter"


@dataclass(frozen=True, slots=True)
class TracesAsked:
    variable: str
    """The variable that asks for traces (named in the errors)."""
    exporter: str
    """One of `EXPORTER_NAMES`."""

    @property
    def modules(self) -> tuple[str, ...]:
        """The modules these traces need."""
        return (*_SDK, _OTLP) if self.exporter == "otlp" else _SDK


def _problem(variable: str, message: str) -> ConfigError:
    return ConfigError([ConfigProblem("environment", variable, message)])


def not_installed(asked: TracesAsked, missing: str) -> ConfigError:
    """The one line that says traces are asked for where OpenTelemetry is not installed."""
    return _problem(
        asked.variable,
        f"traces are asked for but OpenTelemetry is not installed ({missing} is missing): "
        "pip install 'repair-proxy[otel]', or unset the OTEL_* variables",
    )


def _asked(environ: Mapping[str, str]) -> TracesAsked | None:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return None if exporter == "none" else TracesAsked("OTEL_TRACES_EXPORTER", exporter)
    for variable in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        if environ.get(variable, "").strip():
            return TracesAsked(variable, "otlp")
    return None


def traces_asked(environ: Mapping[str, str]) -> TracesAsked | None:
    """The traces the variables ask for, None when they ask for none; `ConfigError` (one line)
    when they ask for what cannot be: an exporter or a protocol not served, or an SDK whose
    modules cannot be found. Finding is not importing: a module found may still fail
    as it is imported, which `tracing_from_env` says."""
    asked = _asked(environ)
    if asked is None:
        return None
    if asked.exporter not in EXPORTER_NAMES:
        served = ", ".join(EXPORTER_NAMES)
        raise _problem("OTEL_TRACES_EXPORTER", f"{asked.exporter!r}: the proxy exports to one of {served}")
    protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if asked.exporter == "otlp" and protocol not in (None, "", "http/protobuf"):
        raise _problem("OTEL_EXPORTER_OTLP_PROTOCOL", f"{protocol!r}: only http/protobuf is served")
    for module in asked.modules:
        missing = _missing(module)
        if missing is not None:
            raise not_installed(asked, missing)
    return asked


def _missing(module: str) -> str | None:
    """The module (or the package above it) that cannot be found; None when it can. Only the
    packages above `module` are imported (the SDK's are small); `module` itself is not."""
    try:
        return module if importlib.util.find_spec(module) is None else None
    except ImportError as exc:  # a package above it is missing, or fails as it is imported
        return exc.name or module
    except ValueError:  # imported already, without a spec: there
        return None
