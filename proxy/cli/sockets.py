"""Listening sockets, bound before anything says it listens: the supervisor holds the port with
one (never listened on), each worker listens on its own, and on a Unix socket of its own."""

from __future__ import annotations

import socket
import stat
from pathlib import Path

__all__ = ["BindError", "bind", "bind_unix"]


class BindError(OSError):
    """The listen address cannot be had (in use, not an address of this host, no permission)."""


def bind(host: str, port: int, reuse_port: bool, listen: bool = True) -> socket.socket:
    """A listening socket, bound before anything says it listens (`listen=False`: only held)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return _bound(sock, (host, port), f"{host}:{port}", listen)


def bind_unix(path: Path) -> socket.socket:
    """A listening Unix socket at `path`, in place of a stale one a dead worker left there."""
    if path.exists() and stat.S_ISSOCK(path.stat().st_mode):
        path.unlink()
    return _bound(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), str(path), str(path), listen=True)


def _bound(sock: socket.socket, address: tuple[str, int] | str, shown: str, listen: bool) -> socket.socket:
    """`sock` bound to `address` (and listening), non-blocking; closed and a `BindError` naming
    `shown` when the address cannot be had."""
    try:
        sock.bind(address)
        if listen:
            sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise BindError(f"cannot listen on {shown}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock
