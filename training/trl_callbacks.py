"""What a TRL run says and how it stops: one progress line per optimiser step, a checkpoint at the last step,
and a clean stop on SIGINT / SIGTERM (``transformers`` callbacks that :mod:`.trl_engine` installs).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from transformers import TrainerCallback

__all__ = ("Progress", "Report", "RunControl", "progress_line", "signal_name")

logger = logging.getLogger(__name__)

Report = Callable[[str], None]
"""Where a run's lines go (the CLI: standard error; by default a module logger)."""


def progress_line(step: int, max_steps: int, logs: Mapping[str, float], seconds: float, *, agent: str) -> str:
    """One optimiser step's line from TRL's logs: the reward mean and the mean of each logged component.

    Example:
        >>> logs = {"reward": 0.5, "rewards/outcome/mean": 0.5, "rewards/outcome/std": 0.1,
        ...         "rewards/veri-r1/label/mean": 1.0, "rewards/veri-r1/format/mean": 0.25, "loss": 0.0}
        >>> progress_line(3, 10, logs, 12.34, agent="veri-r1")
        'step 3/10  reward 0.5 (format=0.25 label=1)  12.3 s/step'
    """
    parts = []
    for key in sorted(logs):
        if key.startswith("rewards/") and key.endswith("/mean") and key != "rewards/outcome/mean":
            name = key[len("rewards/") : -len("/mean")].removeprefix(f"{agent}/")
            parts.append(f"{name}={logs[key]:.3g}")
    components = f" ({' '.join(parts)})" if parts else ""
    return f"step {step}/{max_steps}  reward {logs.get('reward', float('nan')):.3g}{components}  {seconds:.1f} s/step"


class Progress(TrainerCallback):
    """Reports :func:`progress_line` once per optimiser step (from the step's logs)."""

    def __init__(self, report: Report, *, agent: str) -> None:
        self.report, self.agent = report, agent
        self._last = time.perf_counter()
        self._seconds = 0.0
        self._reported = -1

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._last = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        now = time.perf_counter()
        self._seconds, self._last = now - self._last, now

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, float] | None = None, **kwargs: Any) -> None:
        if logs and "reward" in logs and state.global_step != self._reported:
            self._reported = state.global_step
            self.report(progress_line(state.global_step, state.max_steps, logs, self._seconds, agent=self.agent))


class RunControl(TrainerCallback):
    """Saves a checkpoint at the last step always, and stops cleanly on a signal: the first SIGINT or SIGTERM
    lets the current optimiser step finish, saves it and stops (:attr:`received`); a second one goes to the
    handler that was there before (Ctrl-C: ``KeyboardInterrupt``; SIGTERM: the process ends)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    @contextlib.contextmanager
    def installed(self) -> Iterator[RunControl]:
        """The handlers in force inside the block (the main thread only; elsewhere nothing changes); the
        previous ones restored after it."""
        if threading.current_thread() is threading.main_thread():
            self._previous = {number: signal.signal(number, self._handle) for number in self.SIGNALS}
        try:
            yield self
        finally:
            self._restore()

    def _restore(self) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}

    def _handle(self, number: int, frame: Any) -> None:
        if self.received is None:
            self.received = number
            logger.warning("%s: finishing this step, then saving and stopping (again: abort)", signal_name(number))
            return
        previous = self._previous.get(number)
        self._restore()
        if callable(previous):
            previous(number, frame)
        elif previous == signal.SIG_DFL:
            signal.raise_signal(number)
        raise KeyboardInterrupt

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step >= state.max_steps:
            control.should_save = True  # TRL's layout: checkpoint-N/ at the last step, whatever save_steps says
        if self.received is not None:
            control.should_save = control.should_training_stop = True


def signal_name(number: int) -> str:
    """``SIGINT``, ``SIGTERM``."""
    return signal.Signals(number).name
