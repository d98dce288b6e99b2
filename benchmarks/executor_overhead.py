"""Our OpenRLHF agent executor (the Veri-R1 graph as the rollout) vs OpenRLHF 0.11.2's stock
``MultiTurnAgentExecutor`` driving the same episodes, on the same scripted engine, in the same process.

N episodes run concurrently on one event loop, as OpenRLHF runs the samples of a rollout actor: each plans and
searches twice, then answers (3 engine calls). The engine sleeps L seconds per call (a batched vLLM engine's
latency, no CPU) and tokenises the scripted reply with SmolLM2's real tokenizer. The stock peer is the
shortest correct agent a user would write on OpenRLHF's own interface: ``reset`` returns the chat-templated
prompt, ``step`` finds the query with a regex, looks it up in the same in-memory index and returns the
rendered passages as the next user turn; reward 1 for the right label. Ours does everything the framework
does (protocol parsing, escaping, format rules, the reward object, exact token bookkeeping, step spans).

    python benchmarks/executor_overhead.py [--n 128] [--latency 2.0]

``ratio`` = our wall time / the stock executor's (goal ≤ 1.2); ``cpu_ratio`` and ``cpu_ms`` (per episode) show
where the difference comes from. The default latency, 2 s per call, is the shape of a batched vLLM engine
generating a few hundred tokens per turn (as in ``rollout_concurrency.py``); the framework's CPU is a fixed
cost per turn, so a shorter latency raises the ratio (0.5 s: 1.28 on 2 cores). Needs ``openrlhf==0.11.2``
installed (scripts/install.sh installs it without its GPU dependencies) and the embedded model's tokenizer
(``evigraph setup``).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import re
import sys
import time
import types
from pathlib import Path
from typing import Any

from evigraph.agents.veri_r1.prompts import online_prompt
from evigraph.generators.models import ensure_dequantized_copy
from evigraph.machine import tune_gc_for_long_run
from evigraph.training.executor import GraphExecutor, RolloutConfig
from evigraph.training.scripted_engine import ScriptedEngine, ScriptedSamplingParams
from evigraph.trajectory import Evidence

CLAIM = "Hog Island Light was first lit in 1853."
INDEX = {
    "first lit": [Evidence(id="Hog Island Light_sentence_3", text="The first tower was lit in 1854.")],
    "hog island": [Evidence(id="Hog Island Light_sentence_0", text="Hog Island Light stood in Virginia.")],
}
REPLIES = [
    "<plan>Find the tower, then the year it was first lit.</plan>\n<search>Hog Island Light</search>",
    "<think>It is in Virginia. When was it first lit?</think>\n<search>Hog Island Light first lit</search>",
    "<think>The first tower was lit in 1854, not 1853.</think>"
    "<answer>\nLabel: REFUTE\nEvidence: [[Hog Island Light_sentence_0]], [[Hog Island Light_sentence_3]]\n</answer>",
]
GOLD = {"label": "REFUTES", "evidence": ["Hog Island Light_sentence_0", "Hog Island Light_sentence_3"]}


class MemorySearch:
    def search(self, query: str, k: int = 3) -> list[Evidence]:
        return next((hits[:k] for key, hits in INDEX.items() if key in query.lower()), [])

    def batch_search(self, queries: list[str], k: int = 3) -> list[list[Evidence]]:
        return [self.search(q, k) for q in queries]


def load_stock_agent_module() -> Any:
    """OpenRLHF's ``openrlhf/utils/agent.py``, loaded by path (its ``aiohttp`` import is for the single-turn
    remote reward only and is stubbed)."""
    spec = importlib.util.find_spec("openrlhf")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("openrlhf==0.11.2 is not installed: pip install --no-deps openrlhf==0.11.2")
    root = Path(next(iter(spec.submodule_search_locations)))
    sys.modules.setdefault("aiohttp", types.ModuleType("aiohttp"))
    if "openrlhf.utils" not in sys.modules:  # its __init__ imports the math grader (pylatexenc); skip it
        package = types.ModuleType("openrlhf.utils")
        package.__path__ = [str(root / "utils")]
        sys.modules["openrlhf.utils"] = package
    module_spec = importlib.util.spec_from_file_location("openrlhf_stock_agent", root / "utils" / "agent.py")
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def stock_executor(agent_module: Any, tokenizer: Any) -> Any:
    import torch

    search = MemorySearch()
    query = re.compile(r"<search>(.*?)</search>", re.DOTALL)
    label = re.compile(r"Label:\s*(SUPPORT|REFUTE|NOT ENOUGH INFO)")

    class SearchAgent(agent_module.AgentInstanceBase):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.turns = 0

        async def reset(self, states: dict, **kwargs: Any) -> dict:
            return states

        async def step(self, states: dict, **kwargs: Any) -> dict:
            self.turns += 1
            action = states["action_text"]
            found = query.search(action)
            if found is None or self.turns >= 4:
                verdict = label.search(action)
                reward = float(verdict is not None and verdict.group(1) == "REFUTE")
                return {"rewards": torch.tensor([reward]), "environment_feedback": "", "done": True}
            hits = search.search(found.group(1).strip(), 3)
            passages = "\n".join(f"[[{h.id}]]: {h.text}" for h in hits)
            feedback = (
                f"\n<|im_start|>user\n<information>\n{passages}\n</information><|im_end|>\n<|im_start|>assistant\n"
            )
            return {"rewards": torch.tensor([0.0]), "environment_feedback": feedback, "done": False}

    class Executor(agent_module.MultiTurnAgentExecutor):
        def __init__(self) -> None:
            super().__init__(SearchAgent)

    return Executor()


async def run_episodes(executor: Any, prompt: str, label: str, tokenizer: Any, n: int, latency: float) -> Any:
    async def one() -> dict:
        engine = ScriptedEngine(tokenizer, REPLIES, latency_s=latency)  # one engine per episode: its own script
        params = ScriptedSamplingParams(max_tokens=512, logprobs=0, stop=None)
        return await executor.execute(prompt, label, params, 4096, tokenizer, engine)

    wall, cpu = time.perf_counter(), time.process_time()
    results = await asyncio.gather(*(one() for _ in range(n)))
    return results, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--latency", type=float, default=2.0)
    args = parser.parse_args()

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(ensure_dequantized_copy())
    tune_gc_for_long_run()
    ours = GraphExecutor(RolloutConfig(agent="veri-r1"), resources={"search": MemorySearch()})
    label = json.dumps({"input": {"claim": CLAIM}, "gold": GOLD})
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": online_prompt(CLAIM)}], tokenize=False, add_generation_prompt=True
    )
    stock = stock_executor(load_stock_agent_module(), tokenizer)

    rounds = []
    for _ in range(2):  # interleaved, best of two: this machine's run-to-run noise is ±20 %
        ours_out, ours_wall, ours_cpu = asyncio.run(run_episodes(ours, prompt, label, tokenizer, args.n, args.latency))
        stock_out, stock_wall, stock_cpu = asyncio.run(
            run_episodes(stock, prompt, label, tokenizer, args.n, args.latency)
        )
        rounds.append((ours_wall, ours_cpu, stock_wall, stock_cpu))
    assert all(len(r["action_ranges"]) == 3 and r["reward"] > 0 for r in ours_out)
    assert all(len(r["action_ranges"]) == 3 and r["reward"] == 1.0 for r in stock_out)
    ours_wall = min(r[0] for r in rounds)
    ours_cpu = min(r[1] for r in rounds)
    stock_wall = min(r[2] for r in rounds)
    stock_cpu = min(r[3] for r in rounds)
    ratio = ours_wall / stock_wall
    print(f"episodes={args.n} turns=3 latency_s={args.latency}")
    print(f"ours:  wall {ours_wall:.2f} s, cpu {ours_cpu:.2f} s ({1000 * ours_cpu / args.n:.1f} ms/episode)")
    print(f"stock: wall {stock_wall:.2f} s, cpu {stock_cpu:.2f} s ({1000 * stock_cpu / args.n:.1f} ms/episode)")
    print(
        f"RESULT ratio={ratio:.3f} cpu_ratio={ours_cpu / stock_cpu:.2f} cpu_ms={1000 * ours_cpu / args.n:.1f} "
        f"stock_cpu_ms={1000 * stock_cpu / args.n:.1f} n={args.n} latency_s={args.latency} goal_met={ratio <= 1.2}"
    )


if __name__ == "__main__":
    main()
