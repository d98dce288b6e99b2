"""A process shaped like a long ``evigraph eval``: torch loaded and busy, the JVM searching, searches also made
from several other threads that end before the process does. ``test_clean_exit.py`` runs it many times.

    python _exit_repro.py exit            a scripted policy while torch works on another thread
    python _exit_repro.py signal MODEL    a real transformers model generating when the parent signals
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading

import torch

from evigraph.agents.veri_r1.schemas import VeriR1Config
from evigraph.corpora.registry import resolve_corpus
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.graphs.veri_r1 import build_veri_r1_graph
from evigraph.tools.search import BM25Search

CLAIMS = ["Hog Island Light was first lit in 1853.", "Cape Charles Light stands on Smith Island."] * 2


def policy(transcript: list, params: object) -> str:
    if sum(s.origin == "policy" for s in transcript) < 2:
        return "<plan>p</plan><search>Hog Island Light</search>"
    return "<think>t</think><answer>\nLabel: SUPPORT\nEvidence: [[Hog Island Light_sentence_0]]\n</answer>"


def torch_work(stop: threading.Event) -> None:
    while not stop.is_set():
        torch.randn(128, 128) @ torch.randn(128, 128)


async def main(mode: str, model_dir: str | None) -> None:
    search = BM25Search(resolve_corpus("demo"), name="demo")
    if mode == "signal":
        from evigraph.generators.transformers import TransformersGenerator

        generator = TransformersGenerator(model_dir, num_threads=1)
        config = VeriR1Config(max_new_tokens=500)
    else:
        generator = ScriptedGenerator(policy, delay_s=0.01)
        config = VeriR1Config()
    graph = build_veri_r1_graph(generator, search, config)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert all(pool.map(lambda q: search.search(q, 2), ["Hog Island", "Smith Island", "lighthouse"] * 4))
    await asyncio.gather(*(asyncio.to_thread(search.search, "Chesapeake Bay", 2) for _ in range(4)))
    stop = threading.Event()
    worker = threading.Thread(target=torch_work, args=(stop,), daemon=True)
    worker.start()  # torch busy on another thread while the graph runs
    if mode == "signal":
        print("ready", flush=True)  # the parent signals while the runs below generate
    try:
        results = await asyncio.gather(*(graph.ainvoke({"claim": c}) for c in CLAIMS))
    finally:
        stop.set()
        worker.join()
    print("done", len(results), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
