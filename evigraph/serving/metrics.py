"""``/metrics`` of ``evigraph serve``: Prometheus counters through ``prometheus-client``, in a registry of the app's
own (never the process-global one), so two apps in one process -- tests, a host mounting the app -- count apart.

========================================== =================================================================
``evigraph_serve_requests_total``           requests answered, by ``endpoint`` (the route's path template),
                                            ``agent`` (a served agent, else empty) and HTTP ``status``
``evigraph_serve_request_seconds``          their latency (a histogram), by ``endpoint`` and ``agent``
``evigraph_serve_requests_in_flight``       requests being answered now (probes and ``/metrics`` included)
``evigraph_serve_verdicts_total``           verifications, by ``agent`` and ``outcome``: ``passed``, ``failed``
                                            or ``error`` (the run failed or ran out of time; never passes)
``evigraph_serve_model_tokens_total``       tokens the model generated for the verifications, by ``agent``
========================================== =================================================================

Labels take only values the server knows (route templates, served agent names), never what a client sent, so
a client cannot grow the number of series.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from evigraph.verification import Verification

__all__ = ("CONTENT_TYPE_LATEST", "ServeMetrics")

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Seconds: from a refused request (milliseconds) to a long multi-turn verification (minutes)."""


class ServeMetrics:
    """The server's counters, in their own :class:`~prometheus_client.CollectorRegistry`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "evigraph_serve_requests",
            "Requests answered, by endpoint, agent and HTTP status.",
            ("endpoint", "agent", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "evigraph_serve_request_seconds",
            "Request latency in seconds, by endpoint and agent.",
            ("endpoint", "agent"),
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "evigraph_serve_requests_in_flight", "Requests being answered now.", registry=self.registry
        )
        self.verdicts = Counter(
            "evigraph_serve_verdicts",
            "Verifications, by agent and outcome (passed, failed, error).",
            ("agent", "outcome"),
            registry=self.registry,
        )
        self.tokens = Counter(
            "evigraph_serve_model_tokens",
            "Tokens the model generated for the verifications, by agent.",
            ("agent",),
            registry=self.registry,
        )

    def request(self, *, endpoint: str, agent: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        self.requests.labels(endpoint, agent, str(status)).inc()
        self.latency.labels(endpoint, agent).observe(seconds)

    def verdict(self, verdict: Verification, *, tokens: int) -> None:
        """Count one verification and the tokens its run generated."""
        outcome = "error" if verdict.error is not None else "passed" if verdict.passed else "failed"
        self.verdicts.labels(verdict.agent, outcome).inc()
        if tokens:
            self.tokens.labels(verdict.agent).inc(tokens)

    def render(self) -> bytes:
        """The Prometheus text exposition of every counter."""
        return generate_latest(self.registry)
