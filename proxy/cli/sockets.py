"""Listening sockets, bound before anything says it listens: the supervisor claims the port with
one (never listened on), each worker listens on its own, and on a Unix socket of its own.

Workers share the port with `SO_REUSEPORT`, which lets any process of this user that sets it
too join the port. So the supervisor first binds it plainly, which fails while anything at all
listens there (another proxy's set included), and then holds it with `SO_REUSEPORT` alone,
without `SO_REUSEADDR`: another proxy's plain bind then fails even while all our workers are
down, and our own workers can still join it."""

from __future__ import annotations

import errno
import socket
import stat
from pathlib import Path

__all__ = ["BindError", "bind", "bind_unix", "claim"]


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


def claim(host: str, port: int) -> socket.socket:
    """The port of a set of workers, held (bound, never listened on; port 0 made concrete), or a
    `BindError` when anything else listens on it or holds it, sharing or not (see above)."""
    probe = bind(host, port, reuse_port=False, listen=False)
    port = probe.getsockname()[1]
    probe.close()
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return _bound(sock, (host, port), f"{host}:{port}", listen=False)


def bind_unix(path: Path) -> socket.socket:
    """A listening Unix socket at `path`, in place of a stale one a dead worker left there."""
    if path.exists() and stat.S_ISSOCK(path.stat().st_mode):
        path.unlink()
    return _bound(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), str(path), str(path), listen=True)


_HINTS = {
    errno.EADDRINUSE: " (another process listens on it or holds it: stop that one, or choose another --port)",
    errno.EADDRNOTAVAIL: " (not an address of this host: choose another --host)",
    errno.EACCES: " (a port below 1024 needs privileges: choose another --port)",
}
"""What to do, after the system's reason a listen address cannot be had."""


def _bound(sock: socket.socket, address: tuple[str, int] | str, shown: str, listen: bool) -> socket.socket:
    """`sock` bound to `address` (and listening), non-blocking; closed and a `BindError` naming
    `shown` when the address cannot be had."""
    try:
        sock.bind(address)
        if listen:
            sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise BindError(f"cannot listen on {shown}: {exc.strerror or exc}{_HINTS.get(exc.errno or 0, '')}") from None
    sock.setblocking(False)
    return sock
