#!/usr/bin/env bash
# Build capture/build/tidemark-capture.jar (the metric reporter and the Java agent), or its self-tests.
#
#   capture/build.sh          the jar (a no-op when the sources are unchanged)
#   capture/build.sh test     the jar and the self-tests' classes (capture/build/test-classes)
#
# Java 11 bytecode, compiled against Flink 1.20.5's flink-dist (installed from PyPI by flink-jars.sh);
# no other dependency: the agent uses the ASM that flink-dist ships shaded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$here/build
flink_version=1.20.5
for tool in javac jar; do
  command -v "$tool" >/dev/null || { echo "capture: '$tool' not found: install a JDK 11+ (e.g. openjdk-17-jdk-headless)" >&2; exit 1; }
done
lib=$("$here/flink-jars.sh" "$flink_version")
classpath=$(ls "$lib"/flink-dist*.jar)

# sources + this script + the Flink version decide whether anything needs doing
stamp() {
  { echo "$flink_version"; cat "$here/build.sh"; find "${@/#/$here/src/}" -type f | LC_ALL=C sort | xargs cat; } \
    | sha256sum | cut -d' ' -f1
}

jar_file=$build/tidemark-capture.jar
main_stamp=$(stamp main)
if [ ! -f "$jar_file" ] || [ "$(cat "$build/.main-sha256" 2>/dev/null)" != "$main_stamp" ]; then
  rm -rf "$build/classes" && mkdir -p "$build/classes"
  javac --release 11 -Xlint:all,-options,-processing,-serial -Werror -encoding UTF-8 -cp "$classpath" \
    -d "$build/classes" $(find "$here/src/main/java" -name '*.java' | LC_ALL=C sort)
  cp -r "$here/src/main/resources/." "$build/classes/"
  printf 'Premain-Class: tidemark.capture.Agent\nImplementation-Title: tidemark-capture\n' > "$build/manifest.txt"
  jar --create --file "$jar_file.partial" --manifest "$build/manifest.txt" -C "$build/classes" .
  mv "$jar_file.partial" "$jar_file"
  echo "$main_stamp" > "$build/.main-sha256"
  echo "capture: built capture/build/tidemark-capture.jar" >&2
fi

if [ "${1:-}" = test ]; then
  test_stamp=$(stamp test)
  if [ ! -d "$build/test-classes" ] || [ "$(cat "$build/.test-sha256" 2>/dev/null)" != "$test_stamp$main_stamp" ]; then
    rm -rf "$build/test-classes" && mkdir -p "$build/test-classes"
    javac --release 11 -encoding UTF-8 -nowarn -cp "$jar_file:$classpath" -d "$build/test-classes" \
      $(find "$here/src/test/java" -name '*.java' | LC_ALL=C sort)
    # the fake valve of an unknown Flink: its own folder, so it never shadows the real one
    rm -rf "$build/fake-classes" && mkdir -p "$build/fake-classes"
    javac --release 11 -encoding UTF-8 -d "$build/fake-classes" $(find "$here/src/test/fake" -name '*.java')
    echo "$test_stamp$main_stamp" > "$build/.test-sha256"
  fi
fi
