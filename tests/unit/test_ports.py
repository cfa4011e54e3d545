"""The suite's servers get ports outside the kernel's range for outgoing connections."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.ports import free_port


def test_a_free_port_is_below_the_ephemeral_range_and_bindable() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    port = free_port()
    assert 10000 <= port < low
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))


def test_a_taken_port_is_never_returned() -> None:
    with socket.socket() as taken:
        port = free_port()
        taken.bind(("127.0.0.1", port))
        taken.listen()
        assert all(free_port() != port for _ in range(200))
