"""Start OpenRLHF's trainer with evigraph's per-run settings in every Ray worker.

``python -m evigraph.training.launch -- <OpenRLHF flags>`` (what ``evigraph train`` runs): Ray is initialised
first, with a ``runtime_env`` carrying the rollout config path and the advantage mode
(:data:`~evigraph.training.executor.CONFIG_ENV`, :data:`~evigraph.training.advantage_patch.CONFIG_ENV`, taken
from this process's environment), the environment variables OpenRLHF itself sets, and the worker setup hook
that installs the advantage mode in the trainer actor; then OpenRLHF's stock CLI module runs as ``__main__``
(its ``train`` calls ``ray.init`` only when Ray is not running yet). No fork, no patched copy of OpenRLHF.
"""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Sequence

from evigraph.training import advantage_patch, executor
from evigraph.training.config import OPENRLHF_MODULE

__all__ = ("main", "runtime_env")

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


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    import ray

    if not ray.is_initialized():
        ray.init(runtime_env=runtime_env())
    sys.argv = [OPENRLHF_MODULE, *args]
    runpy.run_module(OPENRLHF_MODULE, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
