"""The learning test's warm start, built once by this script and kept in ``tests/training/data/world-small-warm``.

The test is about GRPO, and the warm start it starts from (400 supervised steps on the small world's
demonstrations, ``world_job.warm_started``) took 60-90 s of its two minutes on this machine. It is built the same
way every time (seed 0, one thread, ``world_job.SMALL`` / ``SMALL_POLICY``), so it is built here once and kept: a
0.2M-parameter model (690 KB) plus the fingerprint of what it was trained on. The world, its tokenizer and its
demonstrations are still made by the test itself; when they, the warm-start settings or the policy's shape change,
the fingerprint no longer matches and the test fails naming this script, which rebuilds the folder:

    OMP_NUM_THREADS=1 .venv/bin/python tests/training/world_warm_start.py

The warm start itself (that its loss is the weighted cross-entropy, that it learns a decision at its weighted share)
is tested in ``test_tiny_policy.py``; that it learns the world in ``benchmarks/learning_world.py``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from evigraph.agents.veri_r1 import world_job

FOLDER = Path(__file__).resolve().parent / "data" / "world-small-warm"
SEED = 0
REBUILD = "OMP_NUM_THREADS=1 .venv/bin/python tests/training/world_warm_start.py"


def fingerprint(prepared: world_job.Prepared) -> str:
    """What the warm start depends on: the world's run settings, the policy's shape, the seed, the tokenizer's
    vocabulary and every demonstration (token ids and weights)."""
    digest = hashlib.sha256()
    digest.update(prepared.run.model_dump_json().encode())
    digest.update(world_job.SMALL_POLICY.model_dump_json().encode())
    digest.update(str(SEED).encode())
    # The vocabulary itself, not the tokenizer's serialised form (which a tokenizers release may change).
    digest.update(json.dumps(sorted(prepared.tokenizer.get_vocab().items())).encode())
    for ids, weights in prepared.demonstrations:
        digest.update(json.dumps([list(ids), list(weights)]).encode())
    return digest.hexdigest()


def load(prepared: world_job.Prepared) -> tuple[Any, dict[str, Any]]:
    """The kept warm start for ``prepared`` and what was recorded when it was built.

    Raises:
        AssertionError: no kept warm start, or one built from another world or other settings.
    """
    from transformers import LlamaForCausalLM

    record_file = FOLDER / "warm_start.json"
    assert record_file.is_file(), f"no kept warm start in {FOLDER}: build it with `{REBUILD}`"
    record = json.loads(record_file.read_text(encoding="utf-8"))
    assert record["fingerprint"] == fingerprint(prepared), (
        f"the kept warm start in {FOLDER} was built from another world, tokenizer or warm-start settings: "
        f"rebuild it with `{REBUILD}`"
    )
    return LlamaForCausalLM.from_pretrained(FOLDER), record


def build(out: Path) -> dict[str, Any]:
    """Prepare the small world under ``out``, warm-start the policy on one thread and keep it in :data:`FOLDER`."""
    import torch

    torch.set_num_threads(1)  # the test runs GRPO on one thread too; more threads round differently
    prepared = world_job.prepare(out, world_job.SMALL)
    model, warm = world_job.warm_started(prepared, seed=SEED, size=world_job.SMALL_POLICY)
    assert warm.last_loss < 0.5 * warm.first_loss, warm
    FOLDER.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(FOLDER)
    record = {
        "fingerprint": fingerprint(prepared),
        "warm_start": warm.model_dump(),
        "torch": torch.__version__,
        "built_by": REBUILD,
    }
    (FOLDER / "warm_start.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(build(Path(folder)), indent=2))
    sys.exit(0)
