"""Stopping a service a test or a bench started in its own process group
(``start_new_session=True``): the Python process and the JVM it started."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL to the whole group, as the OOM killer or a node's loss would stop it."""
    with contextlib.suppress(ProcessLookupError):  # the whole group has exited
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def stop(process: subprocess.Popen, timeout_s: float = 300) -> None:
    """SIGTERM, as `systemctl stop` sends (the cycle in progress finishes first); the group
    gets SIGKILL when it has not exited within ``timeout_s``."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_group(process)
