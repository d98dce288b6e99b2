"""Rollouts, the reward registry and the OpenRLHF adapter.

Rewards, advantages and rollout code import with numpy/pydantic only; OpenRLHF, Ray and vLLM are imported
inside the adapter's functions.
"""
