#!/usr/bin/env bash
# Redraw every registered agent's state machine into the docs, offline: docs/graphs/<agent>.mmd (Mermaid text)
# and docs/images/graph-<agent>.png (Graphviz), plus <agent>-verifier for agents that embed another graph
# (AgentSpec.verifier_builder). Needs Graphviz's `dot` (apt-get install graphviz) or pygraphviz for the PNGs.
# tests/test_cli_graph.py fails when the stored Mermaid text differs from what `evigraph graph` prints.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-.venv/bin/python}"
mkdir -p docs/graphs docs/images
# one line per drawing: "<agent>" or "<agent> --verifier"
"$PYTHON" -c '
from evigraph.registry import load_agents
for name, spec in load_agents()[0].items():
    print(name)
    if spec.verifier_builder:
        print(name, "--verifier")
' | while read -r agent flag; do
  stem="$agent${flag:+-verifier}"
  "$PYTHON" -m evigraph graph "$agent" ${flag:+"$flag"} --mermaid --png "docs/images/graph-$stem.png" \
    > "docs/graphs/$stem.mmd"
done
