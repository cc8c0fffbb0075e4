"""The plan model: what recipes build and the executor runs (Plan, Step, typed checks)."""
