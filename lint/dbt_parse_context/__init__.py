"""What dbt gives a model while it parses the project, for sqlfluff's jinja templater.

`make lint` runs sqlfluff over the dbt SQL with the jinja templater (.sqlfluff), which renders
each file with the project's macros but knows of dbt only ``ref``, ``source``, ``config``, ``var``
(a placeholder) and ``is_incremental`` (always true). Every name here is one a model or macro
reads, as dbt's parse phase sets it: ``execute`` is false, ``is_incremental()`` too, queries
return nothing, relations are not found; so each file renders the SQL dbt parses, without a
warehouse. ``var`` returns the project's own vars (dbt_project.yml), so SQL built from them (a
depth, a window span) is the real one.

sqlfluff imports this package and puts its public names in each template's context."""

from __future__ import annotations

import datetime as _datetime
import json as _json
import re as _re
from pathlib import Path as _Path
from types import SimpleNamespace as _Namespace
from typing import Any as _Any

import yaml as _yaml

_ROOT = _Path(__file__).resolve().parents[2]
_VARS: dict[str, _Any] = _yaml.safe_load((_ROOT / "dbt_project.yml").read_text())["vars"]

execute = False
project_name = "tidemark"
invocation_id = "sqlfluff"
run_started_at = _datetime.datetime(2026, 1, 1, tzinfo=_datetime.UTC)
flags = _Namespace(WHICH="run", FULL_REFRESH=False)
target = _Namespace(schema="tidemark", identifier="sqlfluff", name="dev", type="spark")
model = {"name": "model", "resource_type": "model", "config": {}, "description": ""}
graph = {"nodes": {}, "sources": {}, "metrics": {}, "semantic_models": {}}


class _Modules:
    datetime = _datetime
    re = _re

    class pytz:  # noqa: N801 (dbt's name)
        utc = _datetime.UTC


modules = _Modules


def var(name: str, default: _Any = None) -> _Any:
    return _VARS.get(name, default)


def is_incremental() -> bool:
    return False


def env_var(name: str, default: str = "") -> str:
    return default


def run_query(sql: str) -> None:
    return None


def statement(name: str | None = None, fetch_result: bool = False, **kwargs: _Any) -> str:
    """``{% call statement(...) %}``: dbt runs the block's SQL only when executing."""
    return ""


def log(message: str, info: bool = False) -> str:
    return ""


def tojson(value: _Any, **kwargs: _Any) -> str:
    return _json.dumps(value, **kwargs)


class _CompilerError(Exception):
    pass


class exceptions:  # noqa: N801 (dbt's name)
    @staticmethod
    def raise_compiler_error(message: str) -> None:
        raise _CompilerError(message)


class adapter:  # noqa: N801 (dbt's name)
    @staticmethod
    def get_relation(database: _Any = None, schema: _Any = None, identifier: _Any = None) -> None:
        return None

    @staticmethod
    def get_columns_in_relation(relation: _Any) -> list:
        return []

    @staticmethod
    def drop_relation(relation: _Any) -> str:
        return ""


class _Config:
    """``config(...)`` in a model sets nothing here; ``config.get`` gives the default."""

    def __call__(self, *args: _Any, **kwargs: _Any) -> str:
        return ""

    def get(self, name: str, default: _Any = None) -> _Any:
        return default


config = _Config()
