"""Supervised data and runs: stored trajectories as OpenRLHF multi-turn SFT lines, and the SFT command line.

:func:`sft_messages` follows the transcript convention every backend renders (README, "The transcript
convention"): prompt segments keep their role, a policy turn is an ``assistant`` message, an environment turn
(search results, a corrective note) is a new ``user`` message. OpenRLHF's ``--data.multiturn`` then trains on the
assistant messages only, so environment text is masked exactly as in GRPO rollouts. A policy turn that ended
with its end-of-turn token keeps it in the stored text; the chat template adds it again, so it is removed
here (:data:`END_OF_TURN`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evigraph.trajectory import Trajectory

__all__ = ("END_OF_TURN", "SFT_MODULE", "sft_line", "sft_messages")

SFT_MODULE = "openrlhf.cli.train_sft"
END_OF_TURN = ("<|im_end|>", "<|eot_id|>", "<|end|>", "</s>", "<|endoftext|>")
"""End-of-turn markers of the common chat templates, stripped from the end of assistant messages."""


def sft_messages(trajectory: Trajectory, *, end_of_turn: Sequence[str] = END_OF_TURN) -> list[dict[str, str]]:
    """The run as chat messages (see the module docstring).

    Example:
        >>> from evigraph.trajectory import Segment
        >>> run = Trajectory(agent="a", input={}, segments=[
        ...     Segment(origin="prompt", role="user", text="Q?"), Segment(origin="policy", text="<search>q</search>"),
        ...     Segment(origin="environment", text="<information>x</information>"),
        ...     Segment(origin="policy", text="<answer>A</answer><|im_end|>")])
        >>> [m["role"] for m in sft_messages(run)], sft_messages(run)[-1]["content"]
        (['user', 'assistant', 'user', 'assistant'], '<answer>A</answer>')
    """
    messages: list[dict[str, str]] = []
    for segment in trajectory.segments:
        if segment.origin == "prompt":
            messages.append({"role": segment.role or "user", "content": segment.text})
        elif segment.origin == "policy":
            text = segment.text
            for marker in end_of_turn:
                if text.endswith(marker):
                    text = text[: -len(marker)]
                    break
            messages.append({"role": "assistant", "content": text})
        else:
            messages.append({"role": "user", "content": segment.text})
    return messages


def sft_line(trajectory: Trajectory) -> dict[str, Any]:
    """One ``--data.input_key messages`` line, with the run's id, agent and reward for filtering and audit."""
    reward = trajectory.reward(trajectory.reward_scalar) if trajectory.reward_scalar else None
    return {"id": trajectory.id, "agent": trajectory.agent, "reward": reward, "messages": sft_messages(trajectory)}
