"""Natural-language inference for StepGap's stages D and E (specs/stepgap.md §2.5, §9 #6, #7).

Two engines behind one interface, :class:`NLIEngine` (``classify``/``batch_classify`` and their async twins,
an LRU pair cache with counters, ``describe()``, a LangChain face):

- :class:`NLIModel`, the reference: a local 3-way cross-encoder checkpoint (DeBERTa-v3 NLI family) that sees
  the (premise, hypothesis) pair only. Its label order is calibrated at start-up
  (:mod:`evigraph.tools.nli.labels`).
- :class:`GeneratorNLI`, the fallback when no checkpoint is configured: the run's generator scores the words
  entailment / neutral / contradiction after a short isolated prompt. It is weaker, and never silent: its
  results carry ``engine="generator:<name>"`` and ``describe()`` says so.

:func:`make_nli` picks one; :class:`CoalescingNLI` batches the calls of concurrent callers (the rollouts of a
training step) into one. Both label probabilities with :func:`nli_decision`. Torch and transformers load
in ``NLIModel``'s constructor only.
"""

from evigraph.tools.nli.coalescing import CoalescingNLI
from evigraph.tools.nli.cross_encoder import NLIModel
from evigraph.tools.nli.engine import NLICacheInfo, NLIDescription, NLIEngine, NLIInput, Pair
from evigraph.tools.nli.factory import make_nli
from evigraph.tools.nli.generator import GeneratorNLI
from evigraph.tools.nli.labels import LabelOrder, calibrate_label_order
from evigraph.tools.nli.results import NLILabel, NLIResult, nli_decision, render_nli_result

__all__ = (
    "CoalescingNLI",
    "GeneratorNLI",
    "LabelOrder",
    "NLICacheInfo",
    "NLIDescription",
    "NLIEngine",
    "NLIInput",
    "NLILabel",
    "NLIModel",
    "NLIResult",
    "Pair",
    "calibrate_label_order",
    "make_nli",
    "nli_decision",
    "render_nli_result",
)
