"""The operations layer: one module per verb. Branch methods import these lazily (ADR D1)."""
