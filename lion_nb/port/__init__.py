"""The seam below the operations: what an operation may do with a branch (``BranchPort``), the
run lifecycle, tools, the signal bus and the stream-persistence writer. Typed against
``BranchHost`` (``host.py``), which the facade fills; nothing here imports ``lion_nb.session``."""
