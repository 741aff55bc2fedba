"""
The addresses of a webhook server: the port to listen on, and the host to put into its URLs.
"""
from __future__ import annotations

import ipaddress
import socket
from typing import Optional

import aiohttp.web


def get_accessible_addr(addr: Optional[str]) -> str:
    """An address to connect to: the listened one, its loopback for all interfaces (as in Kopf), or localhost."""
    if not addr:
        return 'localhost'
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return addr
    if ip.is_unspecified:
        return '127.0.0.1' if ip.version == 4 else '::1'
    return addr


def format_host(host: str) -> str:
    """Put IPv6 addresses into brackets, as URLs require."""
    try:
        return f'[{host}]' if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host


def get_free_port(addr: Optional[str]) -> int:
    """
    A port for the server to listen on, when none is requested.

    With a specific address, port 0 lets the OS pick a free one atomically.
    Without an address, the server listens on all interfaces of all address
    families (IPv4 & IPv6), and port 0 would give each of them a different
    port; so, a port free on IPv4 is chosen in advance and used for all.
    """
    if addr:
        return 0
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('', 0))
        return int(sock.getsockname()[1])


def get_listening_port(runner: aiohttp.web.AppRunner) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:  # (host, port) or (host, port, flow, scope)
            return int(address[1])
    raise RuntimeError("The webhook server listens on no TCP port.")
