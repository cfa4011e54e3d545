#!/usr/bin/env bash
# Print the `python` of a virtual environment with PyFlink (apache-flink) of one version, making
# it first if needed.
#
#   tests/live/pyflink-venv.sh 2.3.0   ->   .cache/pyflink/pyflink-2.3.0/bin/python
#
# The live tests run the Flink SQL job through PyFlink's Table API (tests/live/job/live_sql_job.py)
# on the releases that have a Python 3.11 wheel (1.19 and newer). PyFlink pins its own py4j, pandas,
# pyarrow and apache-beam, which tidemark's environment does not share (decision 0020), so each
# release gets an environment of its own, outside tidemark's. Made in a temporary folder renamed
# into place when complete, as capture/flink-jars.sh does. uv (tidemark's install tool) when it is
# found beside PYTHON or on PATH, pip otherwise. TIDEMARK_PYFLINK_CACHE moves the cache (default:
# .cache/pyflink in the repository). The apache-beam that PyFlink 1.19 and 1.20 pin imports
# pkg_resources, which setuptools 81 dropped and uv's environments do not carry: setuptools<81 is
# installed with it. `.complete` holds what was installed: a folder made from another list is
# made again.
set -euo pipefail
version=${1:?usage: tests/live/pyflink-venv.sh FLINK_VERSION (1.19.0 or newer, e.g. 2.3.0)}
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${TIDEMARK_PYFLINK_CACHE:-$root/.cache/pyflink}
target=$cache/pyflink-$version
packages="apache-flink==$version setuptools<81"
if [ "$(cat "$target/.complete" 2>/dev/null)" != "$packages" ]; then
  python=${PYTHON:-python3.11}
  command -v "$python" >/dev/null || python=python3
  uv=$(dirname "$(command -v "$python")")/uv
  [ -x "$uv" ] || uv=$(command -v uv || true)
  mkdir -p "$cache"
  partial=$(mktemp -d "$cache/.partial-$version.XXXXXX")
  trap 'rm -rf "$partial"' EXIT
  echo "pyflink-venv: installing apache-flink==$version from PyPI into $target" >&2
  if [ -n "$uv" ]; then
    "$uv" venv --quiet --python "$python" "$partial" >&2 \
      && "$uv" pip install --quiet --python "$partial/bin/python" $packages >&2 \
      || { echo "pyflink-venv: could not install apache-flink==$version from PyPI" >&2; exit 1; }
  else
    "$python" -m venv "$partial" \
      && "$partial/bin/python" -m pip install --quiet --disable-pip-version-check $packages >&2 \
      || { echo "pyflink-venv: could not install apache-flink==$version from PyPI" >&2; exit 1; }
  fi
  # What a Table API job imports when it starts (the loopback server of Python functions too).
  "$partial/bin/python" -c "import pyflink.table, pyflink.fn_execution.beam.beam_worker_pool_service" \
    || { echo "pyflink-venv: apache-flink==$version installed but does not import" >&2; exit 1; }
  echo "$packages" > "$partial/.complete"
  rm -rf "$target"
  mv "$partial" "$target"
  trap - EXIT
fi
echo "$target/bin/python"
