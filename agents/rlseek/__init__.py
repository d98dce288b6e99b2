"""RLSeek: quote-then-judge hallucination span detection (specs/rlseek.md).

Only the quote protocol so far (:mod:`.protocol`); the agent comes with its own issue.
"""
