"""Start OpenRLHF's trainer with evigraph's per-run settings in every Ray worker.

``python -m evigraph.training.launch -- <OpenRLHF flags>`` (what ``evigraph train`` runs): Ray is initialised
first, with a ``runtime_env`` carrying the rollout config path and the advantage mode
(:data:`~evigraph.training.executor.CONFIG_ENV`, :data:`~evigraph.training.advantage_patch.CONFIG_ENV`, taken
from this process's environment), the environment variables OpenRLHF itself sets, and the worker setup hook
that installs the advantage mode in the trainer actor; then OpenRLHF's stock CLI module runs as ``__main__``
(its ``train`` calls ``ray.init`` only when Ray is not running yet). No fork, no patched copy of OpenRLHF.

A run with ``--corpus`` serves it for the job: ``command.sh`` starts ``evigraph corpus serve`` (with the run's
``--retrieval``) in the background on the Ray head's address (``$RAY_HEAD_IP``, default 127.0.0.1: set it to an
address the other nodes reach), stops it when the script exits (a trap), and passes its URL to this launcher's
own options before ``--``:
``--retriever-url URL`` waits for the server's ``/health`` (``--wait`` seconds; ``--server-pid`` fails at once when
the server died), then writes the URL into the rollout config every rollout actor reads.
"""

from __future__ import annotations

import argparse
import os
import runpy
import shlex
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from evigraph.errors import ConfigError
from evigraph.machine import pid_alive
from evigraph.training import advantage_patch, executor
from evigraph.training.config import OPENRLHF_MODULE

__all__ = ("HEAD_ENV", "main", "runtime_env", "serve_lines", "served_url", "set_retriever_url", "wait_for_server")

HEAD_ENV = "RAY_HEAD_IP"
"""The Ray head's address in ``command.sh``: where the run's retrieval server binds (default 127.0.0.1)."""

_OPENRLHF_ENV = {"TOKENIZERS_PARALLELISM": "true", "NCCL_DEBUG": "WARN", "RAY_ENABLE_ZERO_COPY_TORCH_TENSORS": "1"}


def runtime_env(environ: dict[str, str] | None = None) -> dict[str, object]:
    """Ray's ``runtime_env`` for a training run: evigraph's settings and OpenRLHF's own defaults.

    Example:
        >>> env = runtime_env({"EVIGRAPH_ROLLOUT_CONFIG": "/run/rollout.json"})
        >>> env["worker_process_setup_hook"], env["env_vars"]["EVIGRAPH_ROLLOUT_CONFIG"]
        ('evigraph.training.advantage_patch.setup_hook', '/run/rollout.json')
    """
    environ = dict(os.environ if environ is None else environ)
    env_vars = {key: environ.get(key, default) for key, default in _OPENRLHF_ENV.items()}
    for key in (executor.CONFIG_ENV, advantage_patch.CONFIG_ENV):
        if environ.get(key):
            env_vars[key] = environ[key]
    return {"env_vars": env_vars, "worker_process_setup_hook": f"{advantage_patch.__name__}.setup_hook"}


def serve_lines(corpus: str, port: int, retrieval: str | None = None) -> list[str]:
    """``command.sh``'s lines that serve ``corpus`` for the job: bound to ``$RAY_HEAD_IP`` (default 127.0.0.1),
    in the background, killed when the script exits (normally, on failure or on INT/TERM); searched by
    ``retrieval`` (``--retrieval``; ``None``: the server's default, BM25)."""
    words = [sys.executable, "-m", "evigraph.cli.app", "corpus", "serve", corpus, "--port", str(port)]
    serve = shlex.join([*words, "--retrieval", retrieval] if retrieval is not None else words)
    return [
        f"# The run's retrieval server on the Ray head (${HEAD_ENV}, default 127.0.0.1), stopped with the job.",
        f'export {HEAD_ENV}="${{{HEAD_ENV}:-127.0.0.1}}"',
        f'{serve} --host "${HEAD_ENV}" &',
        "EVIGRAPH_CORPUS_PID=$!",
        "trap 'kill \"$EVIGRAPH_CORPUS_PID\" 2>/dev/null || true' EXIT",
        "trap 'exit 143' INT TERM",
    ]


def served_url(port: int, host: str | None = None) -> str:
    """The served corpus's ``/retrieve`` URL; without ``host``, the shell expression ``command.sh`` expands.

    Example:
        >>> served_url(8000), served_url(8000, "10.0.0.5")
        ('http://${RAY_HEAD_IP}:8000/retrieve', 'http://10.0.0.5:8000/retrieve')
    """
    return f"http://{host if host is not None else '${' + HEAD_ENV + '}'}:{port}/retrieve"


def wait_for_server(url: str, *, timeout: float, pid: int | None = None, interval: float = 1.0) -> None:
    """Return once the retrieval server at ``url`` (its ``/retrieve`` address) answers ``GET /health``.

    Raises:
        ConfigError: no answer within ``timeout`` seconds, or the server process ``pid`` is gone.
    """
    health = url.rsplit("/", 1)[0] + "/health"
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(health, timeout=min(5.0, max(timeout, 0.1))) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if pid is not None and not pid_alive(pid):
            raise ConfigError(f"the retrieval server (pid {pid}) exited before answering at {health}")
        if time.monotonic() >= deadline:
            raise ConfigError(f"no retrieval server answered at {health} within {timeout:g} s")
        time.sleep(interval)


def set_retriever_url(path: str | os.PathLike[str] | None, url: str) -> None:
    """Write ``url`` into the rollout config at ``path`` (default: the file
    :data:`~evigraph.training.executor.CONFIG_ENV` names), the file every rollout actor reads.

    Raises:
        ConfigError: no rollout config, or one that does not validate.
    """
    from evigraph.files import atomic_write

    source = path or os.environ.get(executor.CONFIG_ENV)
    config = executor.load_rollout_config(source).model_copy(update={"retriever_url": url, "corpus": None})
    atomic_write(Path(source), config.model_dump_json(indent=2) + "\n")  # type: ignore[arg-type]

    return True


def _launch_options(args: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """This launcher's options (before ``--``) and OpenRLHF's flags (after it; all of them without ``--``)."""
    parser = argparse.ArgumentParser(prog="python -m evigraph.training.launch")
    parser.add_argument("--retriever-url", help="the run's served corpus: wait for it, hand it to the actors")
    parser.add_argument("--wait", type=float, default=600.0, help="seconds to wait for the retrieval server")
    parser.add_argument("--server-pid", type=int, help="the retrieval server's process (fail fast if it dies)")
    if "--" not in args:
        return parser.parse_args([]), args
    split = args.index("--")
    return parser.parse_args(args[:split]), args[split + 1 :]


def main(argv: Sequence[str] | None = None) -> None:
    options, args = _launch_options(list(sys.argv[1:] if argv is None else argv))
    if options.retriever_url:
        wait_for_server(options.retriever_url, timeout=options.wait, pid=options.server_pid)
        set_retriever_url(None, options.retriever_url)
    import ray

    if not ray.is_initialized():
        ray.init(runtime_env=runtime_env())
    sys.argv = [OPENRLHF_MODULE, *args]
    runpy.run_module(OPENRLHF_MODULE, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
