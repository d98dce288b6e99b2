"""StepGap: step-level evidence-gap checker (specs/stepgap.md)."""
