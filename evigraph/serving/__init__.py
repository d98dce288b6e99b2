"""Verifiers behind a network API (issue 31): ``evigraph serve`` (an HTTP API for hosts in any language), a
guarded OpenAI-compatible endpoint, and the graph factories ``langgraph.json`` lists for LangGraph's own server.

A generic floor, like :mod:`evigraph.embed`: it reaches agents only through the registry and the embed layer.

``evigraph serve`` is :mod:`~evigraph.serving.settings` (its flags as one model), :mod:`~evigraph.serving.app`
(the verifiers built once, the FastAPI app, running and draining it), :mod:`~evigraph.serving.verify_api` (the
verification routes), :mod:`~evigraph.serving.gate` (token, concurrency limit, request id, metrics and the
access log, for every route) and :mod:`~evigraph.serving.metrics` (its Prometheus counters).
"""
