"""A free TCP port for a server a test starts.

The kernel hands out ports of its ephemeral range (``net.ipv4.ip_local_port_range``) to every
outgoing connection, and the suite's two workers open many (py4j, PyHive, HTTP). A port found
free in that range could be taken by one of them in the seconds before a JVM binds it (a
``tidemark serve`` that exits at once on a taken port), so ports come from below the range,
where only explicit binds go; a port bound there is free at the moment it is returned.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_port(host: str = "127.0.0.1") -> int:
    try:
        low = int(_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768  # Linux's default
    candidates = list(range(10000, max(low, 10001)))
    random.shuffle(candidates)
    for port in candidates[:200]:
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket() as probe:  # every candidate tried was taken: the kernel's choice
        probe.bind((host, 0))
        return probe.getsockname()[1]
