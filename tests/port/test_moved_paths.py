"""The old import paths of what moved into ``lion_nb.port`` (and of ``recover_branch``) keep
working for one release: each re-exports the same objects and warns, naming the new path."""

from __future__ import annotations

import importlib
import sys

import pytest

MOVED = [
    ("lion_nb.session.port", "lion_nb.port.branch_port", ["BranchPort"]),
    (
        "lion_nb.session.lifecycle",
        "lion_nb.port.lifecycle",
        ["observed_run", "observed_stream", "suppress_lifecycle", "current_run_id", "RunTracker"],
    ),
    ("lion_nb.session.tools", "lion_nb.port.tools", ["Tool", "ToolRegistry"]),
    (
        "lion_nb.persist",
        "lion_nb.port.stream_persist",
        ["ChunkBuffer", "write_snapshot", "read_buffer", "chunk_to_dict", "buffer_path"],
    ),
    ("lion_nb.persist", "lion_nb.session.recover", ["recover_branch"]),
]


@pytest.mark.parametrize(("old", "new", "names"), MOVED)
def test_an_old_path_warns_naming_the_new_one_and_re_exports(old, new, names):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    target = importlib.import_module(new)
    for name in names:
        assert getattr(module, name) is getattr(target, name)


def test_lion_nb_recover_branch_is_the_facades_and_warns_nothing():
    import lion_nb
    from lion_nb.session.recover import recover_branch

    assert lion_nb.recover_branch is recover_branch
