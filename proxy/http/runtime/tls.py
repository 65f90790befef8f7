"""The TLS context for https upstreams, built with the settings (no aiohttp here: a supervisor of
workers builds the runtime, and serves nothing)."""

from __future__ import annotations

import ssl
from pathlib import Path

from proxy.settings.config import Settings
from proxy.settings.problems import ConfigError, ConfigProblem

__all__ = ["upstream_tls"]


def upstream_tls(settings: Settings) -> ssl.SSLContext:
    """The TLS context for https upstreams, built when the settings are (at start and reload): the
    system's CAs, or those of the file `SSL_CERT_FILE` names as it is set now; HTTP/1.1 by ALPN
    (as aiohttp's own); and `upstream.client_cert` (with `client_key`) when the upstream asks for
    one. `ConfigError` naming the key, and where its value came from (the config file, or the
    environment variable that set it), when a file cannot be used."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(("http/1.1",))
    upstream = settings.upstream
    if not upstream.client_cert:
        return context
    cert = settings.base_of("upstream.client_cert") / Path(upstream.client_cert).expanduser()
    key = None
    if upstream.client_key:
        key = settings.base_of("upstream.client_key") / Path(upstream.client_key).expanduser()
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        origin = settings.origin("upstream.client_cert")
        what = f"{cert}" + (f" with key {key}" if key else "")
        key_origin = settings.origin("upstream.client_key")
        if key and key_origin != origin and settings.source in (origin, key_origin):  # one from the file
            what += f" (the key from {key_origin})"
        message = f"{what} cannot be used as a client certificate: {exc.strerror or exc}"
        raise ConfigError([ConfigProblem(origin, "upstream.client_cert", message)]) from None
    return context
