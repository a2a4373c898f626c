"""The package index's connections, each host's addresses asked of the resolver once.

A first run's closure walk opens a connection for each request: a package's page, then three
ranges of a wheel for its metadata where the index offers no metadata file, eight at a time.
Asking the resolver for the host each time made hundreds of lookups a run; a resolver that
answers a burst slowly (a container's, which caches nothing) held requests 5 s each, and
failed some ("Temporary failure in name resolution"), which left the closure unread. The
addresses a host resolved to are kept for the index's life (one run's walk), as a browser keeps
them; what a connection to them does (TLS and its host's certificate, proxies, timeouts) is
urllib's own.

Imported where the index is read over the network only: a run whose closures are cached never
imports http.client, ssl or urllib.request (closure/index.py).
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import urllib.request
from typing import Any

Address = tuple[str, int]


class RememberedAddresses:
    """Each (host, port)'s addresses, from its first answered lookup on."""

    def __init__(self) -> None:
        self._known: dict[Address, list[tuple]] = {}
        # One lookup at a time: the walk's first requests start together, and eight lookups of
        # one host at once are the burst the resolver answers slowly. A lookup that fails is
        # asked again by the next request.
        self._looking_up = threading.Lock()
        self.lookups = 0  # how many times the resolver was asked

    def addresses(self, address: Address) -> list[tuple]:
        known = self._known.get(address)
        if known is not None:
            return known
        with self._looking_up:
            if address not in self._known:
                self.lookups += 1
                self._known[address] = socket.getaddrinfo(address[0], address[1], 0, socket.SOCK_STREAM)
            return self._known[address]

    def connect(self, address: Address, timeout: Any = None, source_address: Address | None = None) -> socket.socket:
        """socket.create_connection's work on the remembered addresses, the first that takes it."""
        failure: OSError | None = None
        for family, kind, protocol, _, target in self.addresses(address):
            connection = socket.socket(family, kind, protocol)
            try:
                if isinstance(timeout, (int, float)):  # else urllib's "no timeout given" marker
                    connection.settimeout(timeout)
                if source_address:
                    connection.bind(source_address)
                connection.connect(target)
                return connection
            except OSError as error:
                connection.close()
                failure = error
        raise failure or OSError(f"no address for {address[0]}")


def remembering_handlers(remembered: RememberedAddresses, context: ssl.SSLContext | None) -> list[Any]:
    """urllib's HTTP and HTTPS handlers, their connections made to the remembered addresses."""

    def made(connection: http.client.HTTPConnection) -> http.client.HTTPConnection:
        # http.client's own hook for how a connection's socket is made (HTTPConnection.__init__
        # sets it to socket.create_connection): the host and port it is given are the server's,
        # or the proxy's when urllib tunnels through one.
        connection._create_connection = remembered.connect
        return connection

    class Plain(urllib.request.HTTPHandler):
        def http_open(self, request: urllib.request.Request) -> Any:
            return self.do_open(lambda host, **given: made(http.client.HTTPConnection(host, **given)), request)

    class Secure(urllib.request.HTTPSHandler):
        def https_open(self, request: urllib.request.Request) -> Any:
            return self.do_open(lambda host, **given: made(http.client.HTTPSConnection(host, **given)), request,
                                context=context)

    return [Plain(), Secure()]  # the context is given to each connection (https_open)
