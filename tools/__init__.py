"""Thin façades over heavy engines: search, NLI, quote matching and text utilities.

Engines (JVM, torch models) start in constructors, never at import time.
"""
