"""Open a page in Debian's headless Chromium, as a person's browser would, and report back.

The page is loaded from a ``file://`` URL with the network off, so a page that needs anything
from outside fails to draw. Chromium's console goes to stderr (``--enable-logging=stderr``);
tidemark's report records script errors and ``console.error`` calls on ``<body data-errors>``
and sets ``<body data-rendered="ok">`` once every figure has drawn.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

FLAGS = [
    "--headless",
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    "--proxy-server=127.0.0.1:9",  # no network: the page must be self-contained
    "--virtual-time-budget=20000",  # let scripts finish before the DOM is dumped
]


@dataclass(frozen=True)
class Shown:
    rendered: str | None
    errors: str | None
    console: list[str]
    dom: str


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail(
            "the browser tests need Debian's chromium (apt-get install chromium);"
            " `make test` installs it where it can (make chromium)",
            pytrace=False,
        )
    return found


def show(page: Path, screenshot: Path, size: str = "1400,5000") -> Shown:
    """Load ``page``: its DOM after scripts ran, its console, and a screenshot."""
    url = page.resolve().as_uri()
    dumped = subprocess.run(
        [chromium(), *FLAGS, "--enable-logging=stderr", "--v=0", "--dump-dom", url],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    subprocess.run(
        [chromium(), *FLAGS, f"--window-size={size}", f"--screenshot={screenshot}", url],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    body = re.search(r"<body([^>]*)>", dumped.stdout)
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', body.group(1))) if body else {}
    console = [line for line in dumped.stderr.splitlines() if ":CONSOLE" in line]
    return Shown(attrs.get("data-rendered"), attrs.get("data-errors"), console, dumped.stdout)
