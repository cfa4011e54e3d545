"""tidemark's stored procedures for Spark: compiled once per machine, loaded by every session.

The dbt materializations publish a mart's new rows with ``CALL tidemark_system.marts.publish``
(docs/decisions/0015-consistent-reads.md): a few lines of Java against Spark's catalog, in
``java/``. They are compiled here with Janino, the Java compiler Spark itself ships (so a Java
runtime is enough, no JDK), in a JVM of their own started through py4j, before Spark starts: the
jar must be known when the session is built. The jar is kept in ``TIDEMARK_CACHE`` (default
``~/.cache/tidemark``), named after the sources and PySpark's version, so it is built once per
machine and version, about two seconds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zipfile
from importlib.metadata import version
from pathlib import Path

from tidemark.spark.settings import SparkSetupError

SOURCES = Path(__file__).with_name("java")
CATALOG = "tidemark_system"
CATALOG_CLASS = "tidemark.spark.Procedures"


def cache_dir() -> Path:
    setting = os.environ.get("TIDEMARK_CACHE", "").strip()
    if setting:
        return Path(setting).expanduser().absolute()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or Path.home() / ".cache"
    return Path(base) / "tidemark"


def _sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def jar_path() -> Path:
    """Where the jar for these sources and this PySpark lives."""
    digest = hashlib.sha256(version("pyspark").encode())
    for source in _sources():
        digest.update(source.relative_to(SOURCES).as_posix().encode())
        digest.update(source.read_bytes())
    return cache_dir() / f"tidemark-procedures-{digest.hexdigest()[:16]}.jar"


def procedures_jar(java: str = "java") -> Path:
    """The compiled procedures, built first if this machine has none for these sources."""
    target = jar_path()
    if target.is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SparkSetupError(
            f"cannot create {target.parent} for tidemark's compiled Spark procedures ({exc}); "
            "set TIDEMARK_CACHE to a folder this user can write"
        ) from exc
    with tempfile.TemporaryDirectory(prefix="tidemark-procedures-") as scratch:
        classes = Path(scratch) / "classes"
        classes.mkdir()
        _compile(_sources(), classes, java)
        partial = Path(scratch) / "procedures.jar"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            for compiled in sorted(classes.rglob("*.class")):
                jar.write(compiled, compiled.relative_to(classes).as_posix())
        # Another process may build the same jar at once: each renames a whole file into place.
        shutil.move(str(partial), str(target.with_suffix(f".{os.getpid()}.partial")))
        os.replace(target.with_suffix(f".{os.getpid()}.partial"), target)
    return target


def _compile(sources: list[Path], classes: Path, java: str) -> None:
    """Compile ``sources`` into ``classes`` with Janino, in a short-lived JVM of PySpark's jars."""
    import pyspark
    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    classpath = os.pathsep.join(str(j) for j in jars)
    port = launch_gateway(classpath=classpath, die_on_exit=True, java_path=java)
    gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port))
    try:
        jvm = gateway.jvm

        def files(paths) -> object:
            array = gateway.new_array(jvm.java.io.File, len(paths))
            for i, path in enumerate(paths):
                array[i] = jvm.java.io.File(str(path))
            return array

        compiler = jvm.org.codehaus.janino.Compiler()
        compiler.setTargetVersion(8)
        compiler.setClassPath(files(jars))
        compiler.setDestinationDirectory(jvm.java.io.File(str(classes)), False)
        try:
            compiler.compile(files(sources))
        except Exception as exc:
            cause = getattr(exc, "java_exception", None)
            detail = cause.getMessage() if cause is not None else str(exc)
            raise SparkSetupError(f"tidemark's Spark procedures did not compile: {detail}") from exc
    finally:
        gateway.shutdown()
