"""Branch (the per-conversation facade) and Session (branches + shared operation registry)."""
