"""Installing test plug-ins the way pip lays a distribution out, without pip: a ``*.dist-info`` folder with
``METADATA`` and ``entry_points.txt`` on a path entry, which ``importlib.metadata`` reads like any installed
package. The example plug-in agent (``examples/plugin_agent``) is registered this way."""

from __future__ import annotations

from pathlib import Path

PLUGIN_ROOT = Path(__file__).resolve().parents[1] / "examples" / "plugin_agent"
"""The example third-party agent's project folder (its package is ``passage_check``)."""


def install_distribution(site: Path, name: str, entry_points: dict[str, str]) -> Path:
    """Write ``<name>-0.1.dist-info`` into ``site`` registering ``entry_points`` (agent name → ``module:SPEC``)."""
    dist = site / f"{name.replace('-', '_')}-0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    lines = "".join(f"{agent} = {target}\n" for agent, target in entry_points.items())
    (dist / "entry_points.txt").write_text(f"[evigraph.agents]\n{lines}", encoding="utf-8")
    return site


def install_plugin_agent(site: Path) -> list[str]:
    """Register the example plug-in agent from ``site``; returns the path entries to put on ``sys.path``
    (or ``PYTHONPATH`` for a subprocess)."""
    install_distribution(site, "passage-check", {"passage-check": "passage_check:SPEC"})
    return [str(site), str(PLUGIN_ROOT)]
