#!/usr/bin/env bash
# Print the folder of Flink's jars for one version, installing them from PyPI first if needed.
#
#   capture/flink-jars.sh 2.2.0   ->   .cache/flink/flink-2.2.0/pyflink/lib
#
# PyPI's apache-flink-libraries wheel carries Flink's distribution jars (flink-dist and friends);
# nothing else is installed (--no-deps). The install goes to a temporary folder that is renamed
# into place only when complete, so an interrupted run never leaves a half cache behind.
# TIDEMARK_FLINK_CACHE moves the cache (default: .cache/flink in the repository).
set -euo pipefail
version=${1:?usage: capture/flink-jars.sh FLINK_VERSION (e.g. 1.20.5 or 2.2.0)}
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${TIDEMARK_FLINK_CACHE:-$root/.cache/flink}
target=$cache/flink-$version
if [ ! -f "$target/.complete" ]; then
  python=${PYTHON:-python3}
  command -v "$python" >/dev/null || python=python3.11
  mkdir -p "$cache"
  partial=$(mktemp -d "$cache/.partial-$version.XXXXXX")
  trap 'rm -rf "$partial"' EXIT
  echo "flink-jars: installing apache-flink-libraries==$version from PyPI into $target" >&2
  if ! "$python" -m pip install --quiet --disable-pip-version-check --no-deps \
      --target "$partial" "apache-flink-libraries==$version" >&2; then
    echo "flink-jars: could not install apache-flink-libraries==$version from PyPI" >&2
    exit 1
  fi
  ls "$partial"/pyflink/lib/flink-dist*.jar >/dev/null 2>&1 \
    || { echo "flink-jars: apache-flink-libraries==$version has no pyflink/lib/flink-dist*.jar" >&2; exit 1; }
  touch "$partial/.complete"
  rm -rf "$target"
  mv "$partial" "$target"
  trap - EXIT
fi
echo "$target/pyflink/lib"
