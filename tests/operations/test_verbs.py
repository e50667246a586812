"""``operations/verbs.py``: the verbs' facts in one table, which the conversation, the chat
view and the flow read (the conversation's old names are the same objects)."""

from __future__ import annotations

import pytest

from lion_nb import Branch
from lion_nb.operations import verbs
from lion_nb.session import conversation


def test_the_conversation_re_exports_the_tables_objects():
    for name in ("VERBS", "SENDS_HISTORY", "TAKES_INSTRUCTION", "Verb", "warm_up"):
        assert getattr(conversation, name) is getattr(verbs, name)


def test_every_named_verb_is_a_branch_verb_with_a_module():
    assert set(verbs.VERB_MODULES) == set(verbs.VERBS)
    assert verbs.SENDS_HISTORY <= set(verbs.VERBS) and verbs.TAKES_INSTRUCTION <= set(verbs.VERBS)
    assert all(callable(getattr(Branch, name)) for name in verbs.VERBS)


@pytest.mark.parametrize("verb", sorted(verbs.SENDS_HISTORY))
def test_an_interactive_caller_keeps_a_stopped_reply_and_fits_the_window(verb):
    assert verbs.interactive_defaults(verb) == {"on_stop": "record", "fit_context": True}
    assert verbs.interactive_defaults(verb, fit_context=False) == {"on_stop": "record"}


async def _own(branch, text, **kw):  # a verb of one's own chooses for itself
    return None


@pytest.mark.parametrize("verb", ["run", _own])
def test_run_and_ones_own_function_get_no_interactive_defaults(verb):
    assert verbs.interactive_defaults(verb) == {}


def test_the_interactive_defaults_cannot_be_changed_by_a_caller():
    with pytest.raises(TypeError):
        verbs.INTERACTIVE["on_stop"] = "discard"  # type: ignore[index]
