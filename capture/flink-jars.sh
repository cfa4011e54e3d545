#!/usr/bin/env bash
# Print the folder of Flink's jars for one version, installing them from PyPI first if needed.
#
#   capture/flink-jars.sh 2.2.0   ->   .cache/flink/flink-2.2.0/pyflink/lib
#
# PyPI's apache-flink-libraries carries Flink's distribution jars (flink-dist, the table planner and
# friends): as a wheel with pyflink/lib/ from 1.19 on, as a source archive with the same jars in
# deps/lib/ for 1.18 and older (whose setup.py does not run on Python 3.11). Either way the archive
# is only downloaded (`pip download --no-deps`, nothing is built or installed) and its jars are
# unpacked into pyflink/lib/, in a temporary folder that is renamed into place only when complete,
# so an interrupted run never leaves a half cache behind.
# TIDEMARK_FLINK_CACHE moves the cache (default: .cache/flink in the repository).
set -euo pipefail
version=${1:?usage: capture/flink-jars.sh FLINK_VERSION (e.g. 1.15.4, 1.20.5 or 2.3.0)}
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${TIDEMARK_FLINK_CACHE:-$root/.cache/flink}
target=$cache/flink-$version
mkdir -p "$cache"
# One install of a version at a time: a second caller (the suite's prefetch and a test, say) waits,
# then finds it complete; a partial folder is then one a killed run left, and goes.
exec 9>"$cache/.lock-$version"
flock 9
rm -rf "$cache/.partial-$version".*
if [ ! -f "$target/.complete" ]; then
  python=${PYTHON:-python3}
  command -v "$python" >/dev/null || python=python3.11
  partial=$(mktemp -d "$cache/.partial-$version.XXXXXX")
  trap 'rm -rf "$partial"' EXIT
  echo "flink-jars: downloading apache-flink-libraries==$version from PyPI into $target" >&2
  # pip reads a source archive's metadata but builds nothing; --no-deps: only this one archive.
  if ! "$python" -m pip download --quiet --disable-pip-version-check --no-deps \
      --dest "$partial/download" "apache-flink-libraries==$version" >&2; then
    echo "flink-jars: could not download apache-flink-libraries==$version from PyPI" >&2
    exit 1
  fi
  "$python" - "$partial" <<'EOF'
import pathlib, shutil, sys, tarfile, zipfile

partial = pathlib.Path(sys.argv[1])
(archive,) = (partial / "download").iterdir()
lib = partial / "pyflink" / "lib"
lib.mkdir(parents=True)
if archive.suffix in (".whl", ".zip"):
    with zipfile.ZipFile(archive) as z:
        for name in z.namelist():
            if name.startswith("pyflink/lib/") and name.endswith(".jar"):
                with z.open(name) as src, (lib / name.rsplit("/", 1)[1]).open("wb") as out:
                    shutil.copyfileobj(src, out)
else:
    with tarfile.open(archive) as t:
        for member in t.getmembers():
            parts = member.name.split("/")
            if member.isfile() and parts[1:3] == ["deps", "lib"] and member.name.endswith(".jar"):
                with t.extractfile(member) as src, (lib / parts[-1]).open("wb") as out:
                    shutil.copyfileobj(src, out)
shutil.rmtree(partial / "download")
EOF
  ls "$partial"/pyflink/lib/flink-dist*.jar >/dev/null 2>&1 \
    || { echo "flink-jars: apache-flink-libraries==$version has no flink-dist*.jar" >&2; exit 1; }
  touch "$partial/.complete"
  rm -rf "$target"
  mv "$partial" "$target"
  trap - EXIT
fi
echo "$target/pyflink/lib"
