"""Certificates made on the spot for TLS tests (with `cryptography`), and an https upstream on
loopback that records what it got, like `support.Upstream`."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestServer
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from support import Upstream


@dataclass(frozen=True)
class Issued:
    cert: Path
    key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write(path: Path, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Issued:
    cert_path, key_path = path.with_suffix(".crt"), path.with_suffix(".key")
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return Issued(cert_path, key_path)


@dataclass(frozen=True)
class Authority:
    """A CA of our own, whose certificates nothing but a test trusts."""

    issued: Issued
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @classmethod
    def make(cls, directory: Path, name: str = "test-ca") -> Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
            .sign(key, hashes.SHA256())
        )
        return cls(_write(directory / name, cert, key), cert, key)

    def issue(self, directory: Path, name: str, *, server: bool) -> Issued:
        """A leaf: for 127.0.0.1 and localhost when `server`, else a client certificate."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        )
        if server:
            names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
            usage = ExtendedKeyUsageOID.SERVER_AUTH
        else:
            usage = ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        return _write(directory / name, builder.sign(self.key, hashes.SHA256()), key)


def server_context(server: Issued, client_ca: Authority | None = None) -> ssl.SSLContext:
    """A server's TLS; with `client_ca`, it requires a client certificate that CA issued."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(server.cert, server.key)
    if client_ca is not None:
        context.load_verify_locations(client_ca.issued.cert)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


async def start_tls_upstream(context: ssl.SSLContext) -> Upstream:
    """`support.Upstream` served over TLS on 127.0.0.1 (its `base_url` is https://)."""
    app = web.Application()
    holder: dict[str, Upstream] = {}

    async def route(request: web.Request) -> web.StreamResponse:
        return await holder["u"].handle(request)

    app.router.add_route("*", "/{tail:.*}", route)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server(ssl=context)
    holder["u"] = Upstream(server=server)
    return holder["u"]
