"""Search-R1: the search-interleaved question-answering traces StepGap checks (specs/stepgap.md §2.1).

Only the tag protocol so far (:mod:`.protocol`); the trace generator comes with StepGap.
"""
