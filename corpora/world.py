"""A seeded synthetic world for training experiments: made-up people, firms and towns, one short document per
person and per firm, and claims with gold labels and gold evidence ids that need one or two searches.

Why it exists: a policy can only be seen to learn on a CPU in minutes when the task is small, fully known and
needs the tools. Real claim data gives neither (a small model cannot verify real claims); this world does.
Nothing in it exists outside the seed, so no model can answer from memory: the answer is in the documents.

- **People** live in a town and work for a firm: ``Dovik lives in Sarnel. Dovik works for Tarbo.``
- **Firms** are based in a town: ``Tarbo is based in Velmor.``
- **1-hop claims** (one search, the person): ``Dovik lives in Sarnel.``
- **2-hop claims** (two searches, the person then the firm): ``Dovik works for a firm based in Velmor.``

Each claim is SUPPORT or REFUTE (a REFUTE claim swaps the town for another), balanced per hop count; its gold
evidence is the documents on its path (the person's, then the firm's), and ``path`` names the entities a search
must name. Documents are written as corpus-builder JSONL (:mod:`evigraph.corpora.documents`), claims in the
claim-file format every verifier reads (``id, claim, label, evidence``), so the world builds into a real BM25
corpus and trains with the ordinary commands. Names are two syllables from one inventory, so held-out people are
new combinations of known pieces.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evigraph.files import atomic_write

__all__ = (
    "Claim",
    "Firm",
    "Person",
    "World",
    "WorldConfig",
    "build_world",
    "claim_path",
    "make_claims",
    "write_world",
)

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z")
_NUCLEI = ("a", "e", "i", "o", "u")
_CODAS = ("", "l", "n", "r", "s", "k")
_ONE_HOP = "{person} lives in {town}."
_TWO_HOP = "{person} works for a firm based in {town}."
_ONE_HOP_RE = re.compile(r"^(?P<person>\w+) lives in (?P<town>\w+)\.$")
_TWO_HOP_RE = re.compile(r"^(?P<person>\w+) works for a firm based in (?P<town>\w+)\.$")


class WorldConfig(BaseModel):
    """How big the world is; everything else follows from ``seed``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = 0
    people: int = Field(800, ge=4)
    firms: int = Field(24, ge=2)
    towns: int = Field(4, ge=2)


class Person(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    town: str
    firm: str


class Firm(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    town: str


class World(BaseModel):
    """The knowledge base: every fact of the world."""

    model_config = ConfigDict(frozen=True)

    config: WorldConfig
    towns: list[str]
    firms: list[Firm]
    people: list[Person]

    def person(self, name: str) -> Person | None:
        return next((p for p in self.people if p.name == name), None)

    def firm(self, name: str) -> Firm | None:
        return next((f for f in self.firms if f.name == name), None)

    def documents(self) -> list[dict[str, str]]:
        """One corpus document per person and per firm (id = the entity's name)."""
        people = [
            {"id": p.name, "text": f"{p.name} lives in {p.town}. {p.name} works for {p.firm}."} for p in self.people
        ]
        firms = [{"id": f.name, "text": f"{f.name} is based in {f.town}."} for f in self.firms]
        return people + firms


class Claim(BaseModel):
    """One claim with its gold: the claim-file fields plus the hop count and the entities on its path."""

    model_config = ConfigDict(frozen=True)

    id: str
    claim: str
    label: Literal["SUPPORT", "REFUTE"]
    evidence: list[str]
    """The documents on the claim's path (gold evidence ids)."""
    hops: Literal[1, 2]
    path: list[str]
    """The entities a search must name, in order (the person, then the firm for 2-hop claims)."""
    stated: str
    """The town the claim names (the true one for SUPPORT)."""


def _names(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    names: list[str] = []
    while len(names) < count:
        word = "".join(rng.choice(_ONSETS) + rng.choice(_NUCLEI) + rng.choice(_CODAS) for _ in range(2))
        if len(word) >= 4 and word not in taken:
            taken.add(word)
            names.append(word.capitalize())
    return names


def build_world(config: WorldConfig | None = None) -> World:
    """The world of ``config.seed`` (the same seed gives the same world).

    Example:
        >>> world = build_world(WorldConfig(seed=1, people=6, firms=2, towns=3))
        >>> len(world.documents()), world == build_world(WorldConfig(seed=1, people=6, firms=2, towns=3))
        (8, True)
    """
    config = config or WorldConfig()
    rng = random.Random(config.seed)
    taken: set[str] = set()
    towns = _names(rng, config.towns, taken)
    firms = [Firm(name=name, town=rng.choice(towns)) for name in _names(rng, config.firms, taken)]
    people = [
        Person(name=name, town=rng.choice(towns), firm=rng.choice(firms).name)
        for name in _names(rng, config.people, taken)
    ]
    return World(config=config, towns=towns, firms=firms, people=people)


def make_claims(world: World, people: Sequence[Person], *, per_person: int, seed: int, prefix: str) -> list[Claim]:
    """``per_person`` claims about each of ``people``, cycling through (1-hop, 2-hop) x (SUPPORT, REFUTE) so that
    both hop counts and both labels stay balanced; a REFUTE claim names a town other than the true one."""
    rng = random.Random(seed)
    kinds = [(hops, label) for hops in (1, 2) for label in ("SUPPORT", "REFUTE")]
    claims = []
    for n, person in enumerate(people):
        for k in range(per_person):
            hops, label = kinds[(n * per_person + k + seed) % len(kinds)]
            firm = world.firm(person.firm)
            assert firm is not None
            true_town = person.town if hops == 1 else firm.town
            town = true_town if label == "SUPPORT" else rng.choice([t for t in world.towns if t != true_town])
            template = _ONE_HOP if hops == 1 else _TWO_HOP
            path = [person.name] if hops == 1 else [person.name, firm.name]
            claims.append(
                Claim(
                    id=f"{prefix}-{len(claims)}",
                    claim=template.format(person=person.name, town=town),
                    label=label,  # type: ignore[arg-type]
                    evidence=list(path),
                    hops=hops,  # type: ignore[arg-type]
                    path=path,
                    stated=town,
                )
            )
    rng.shuffle(claims)
    return claims


def claim_path(world: World, claim: str) -> list[str] | None:
    """The entities a search must name to check ``claim`` (``None`` for a sentence that is not a world claim).

    Example:
        >>> world = build_world(WorldConfig(seed=1, people=6, firms=2, towns=3))
        >>> person = world.people[0]
        >>> claim_path(world, f"{person.name} works for a firm based in Nowhere.") == [person.name, person.firm]
        True
    """
    for pattern, hops in ((_ONE_HOP_RE, 1), (_TWO_HOP_RE, 2)):
        match = pattern.match(claim.strip())
        if match:
            person = world.person(match["person"])
            if person is None:
                return None
            return [person.name] if hops == 1 else [person.name, person.firm]
    return None


def _jsonl(rows: Iterable[BaseModel | dict[str, object]]) -> str:
    return "".join(
        json.dumps(r.model_dump() if isinstance(r, BaseModel) else r, ensure_ascii=False) + "\n" for r in rows
    )


def write_world(
    world: World,
    out: Path,
    *,
    heldout_people: int,
    train_claims_per_person: int = 4,
    heldout_claims_per_person: int = 4,
) -> dict[str, Path]:
    """Write the world under ``out``: ``world.json`` (the knowledge base), ``documents.jsonl`` (the corpus source),
    ``train.jsonl`` (claims about all but the last ``heldout_people`` people) and ``heldout.jsonl`` (claims about
    those, never seen in training). Returns the paths by name."""
    if not 0 < heldout_people < len(world.people):
        raise ValueError(f"heldout_people must be between 1 and {len(world.people) - 1}, got {heldout_people}")
    out.mkdir(parents=True, exist_ok=True)
    train_people, heldout = world.people[:-heldout_people], world.people[-heldout_people:]
    seed = world.config.seed
    paths = {
        "world": out / "world.json",
        "documents": out / "documents.jsonl",
        "train": out / "train.jsonl",
        "heldout": out / "heldout.jsonl",
    }
    atomic_write(paths["world"], world.model_dump_json(indent=1) + "\n")
    atomic_write(paths["documents"], _jsonl(world.documents()))
    train = make_claims(world, train_people, per_person=train_claims_per_person, seed=seed, prefix="train")
    atomic_write(paths["train"], _jsonl(train))
    held = make_claims(world, heldout, per_person=heldout_claims_per_person, seed=seed + 1, prefix="heldout")
    atomic_write(paths["heldout"], _jsonl(held))
    return paths
