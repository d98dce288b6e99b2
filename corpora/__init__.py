"""Corpus building and index management (Pyserini BM25 indexes, bundled demo corpus, registry)."""
