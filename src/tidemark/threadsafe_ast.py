"""One lock around :func:`ast.parse`, for dbt's threads on CPython 3.11 and 3.12.

CPython keeps the AST constructor's recursion depth once per interpreter, not per thread. When
two threads build AST objects at once (a garbage collection inside one lets the other run), one
fails at random with ``SystemError: AST constructor recursion depth mismatch``
(python/cpython#106905). dbt renders Jinja natively on its worker threads, and its native
rendering calls :func:`ast.literal_eval`, which parses: a `dbt build` with four threads reported
a unit test's fixture as a "Compilation Error" with that message about once in three runs of a
warm process. :func:`ast.literal_eval` looks ``parse`` up in the :mod:`ast` module when called,
so replacing the module's ``parse`` serialises every caller.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def install() -> None:
    """Serialise :func:`ast.parse` in this process (idempotent)."""
    if getattr(ast.parse, "tidemark_locked", False):
        return
    parse = ast.parse

    def locked_parse(*args, **kwargs):  # type: ignore[no-untyped-def]
        with _LOCK:
            return parse(*args, **kwargs)

    locked_parse.tidemark_locked = True  # type: ignore[attr-defined]
    locked_parse.__doc__ = parse.__doc__
    ast.parse = locked_parse  # type: ignore[assignment]
