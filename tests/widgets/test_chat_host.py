"""The chat view is composed, not stacked: its panels know it as a ``ChatHost``, their page
actions go through one ``ActionTable`` keyed by ``protocol.ACTIONS``, and nothing in it
redefines an ipywidgets / anywidget attribute but the extension points that call ipywidgets'
own (and ``send``, which keeps ``Widget.send``'s meaning for a dict)."""

from __future__ import annotations

import inspect
from typing import Any

import anywidget
import ipywidgets
import pytest

from lion_nb import Branch, iModel
from lion_nb.widgets import protocol
from lion_nb.widgets.chat_host import ActionTable
from lion_nb.widgets.chat_status import ChatStatus
from lion_nb.widgets.chat_view import BranchView
from lion_nb.widgets.compare_view import CompareView
from lion_nb.widgets.conversation_controls import ConversationControls
from lion_nb.widgets.flow_view import FlowView
from lion_nb.widgets.grid_view import GridView
from lion_nb.widgets.inspector import ProgressionInspector
from lion_nb.widgets.send_controls import SendControls
from lion_nb.widgets.token_panels import TokenControls

# the actions each part of the chat view handles: one owner per name
CHAT_ACTIONS = {
    "front": {"resync", "copy", "leave"},
    "send_controls": {"send", "stop"},
    "conversation_controls": {
        "regenerate",
        "edit",
        "continue",
        "switch",
        "compare",
        "compare_close",
        "clear",
    },
    "token_controls": {"tokens", "token_top", "fork_token", "sample"},
    "sampling_panel": {"sampler"},
    "reply_tree_panel": {"tree", "tree_pick"},
    "prompt_panel": {"prompt_tokens"},
}


def _view() -> BranchView:
    return BranchView(Branch(chat_model=iModel(provider="scripted", replies=["hi"])))


def test_every_action_has_exactly_one_handler_in_the_chat_views_table() -> None:
    view = _view()
    owners: dict[str, str] = {}
    for part, names in CHAT_ACTIONS.items():
        for name in names:
            assert name not in owners, f"{name} is claimed by {owners.get(name)} and {part}"
            owners[name] = part
    assert set(view.actions) == set(owners)
    assert set(view.actions) <= set(protocol.ACTIONS)
    for part in ("send_controls", "conversation_controls", "token_controls", "reply_tree_panel"):
        panel = getattr(view, part)
        for name, handler in panel.actions().items():
            assert view.actions[name] == handler, name  # the panel's own handler, not a copy
    view.close()


def test_every_protocol_action_is_handled_by_some_view() -> None:
    handled: set[str] = set(_view().actions)
    inspector = ProgressionInspector(Branch())
    handled |= set(inspector.front.actions)
    handled |= {n for n in protocol.ACTIONS if hasattr(FlowView, f"_action_{n}")}
    handled |= {n for n in protocol.ACTIONS if hasattr(GridView, f"_action_{n}")}
    assert handled == set(protocol.ACTIONS)
    inspector.close()


def test_the_table_refuses_an_unknown_name_and_a_second_handler() -> None:
    table = ActionTable()
    table.register("tokens", lambda _c: None)
    with pytest.raises(ValueError, match="has a handler already"):
        table.register("tokens", lambda _c: None)
    with pytest.raises(ValueError, match="not a page action"):
        table.register("wobble", lambda _c: None)
    assert list(table) == ["tokens"]


def test_a_panels_action_reaches_the_panel() -> None:
    view = _view()
    seen: list[dict[str, Any]] = []
    panels = view.token_controls.panels
    panels.set_open = lambda key, open_: seen.append({key: open_})
    view._on_page(view, {"action": "tokens", "key": "k1", "open": True}, [])
    assert seen == [{"k1": True}]  # the page's message reached the token panel
    view._on_page(view, {"action": "wobble", "key": "k1"}, [])  # not in the protocol: ignored
    assert seen == [{"k1": True}]
    view.close()


def test_panels_are_held_not_inherited() -> None:
    panels = (ChatStatus, SendControls, ConversationControls, TokenControls)
    assert not any(issubclass(BranchView, panel) for panel in panels)
    for panel in panels:
        assert panel.__mro__ == (panel, object)  # no mixin base, no widget


# ipywidgets' methods lion_nb's widget classes extend (each calls ipywidgets' own), and the
# class-level bookkeeping traitlets writes on every HasTraits subclass
EXTENSION_POINTS = {"__init__", "__repr__", "close", "_repr_mimebundle_", "send_state"}
TRAITLETS_BOOKKEEPING = {
    "_traits",
    "_trait_default_generators",
    "_all_trait_default_generators",
    "_static_immutable_initial_values",
    "_descriptors",
    "_instance_inits",
}
DUNDER_OWN = {"__module__", "__doc__", "__qualname__", "__annotations__", "__dict__"}
DUNDER_OWN |= {"__weakref__", "__firstlineno__", "__static_attributes__", "__parameters__"}


def _redefined(cls: type) -> dict[str, str]:
    """Attribute name -> the lion_nb class that redefines an ipywidgets / anywidget one."""
    base = set(dir(ipywidgets.DOMWidget)) | set(dir(anywidget.AnyWidget))
    out = {}
    for klass in cls.__mro__:
        if not klass.__module__.startswith("lion_nb"):
            continue
        for name in vars(klass):
            if name in base and name not in DUNDER_OWN | TRAITLETS_BOOKKEEPING:
                out.setdefault(name, klass.__name__)
    return out


@pytest.mark.parametrize("cls", [BranchView, CompareView], ids=lambda c: c.__name__)
def test_no_view_attribute_shadows_an_ipywidgets_attribute(cls: type) -> None:
    redefined = _redefined(cls)
    assert set(redefined) - EXTENSION_POINTS - {"send"} == set(), redefined
    for name in set(redefined) & EXTENSION_POINTS - {"__init__", "__repr__"}:
        source = inspect.getsource(getattr(cls, name))
        assert "super()" in source, f"{name} replaces ipywidgets' instead of extending it"


def test_send_keeps_ipywidgets_meaning_for_a_message() -> None:
    """``BranchView.send(text)`` is the chat verb; a dict is ipywidgets' ``Widget.send``."""
    view = _view()
    sent: list[dict[str, Any]] = []
    record = lambda data=None, buffers=None, **_: sent.append(data)  # noqa: E731
    view.comm.send = record
    view.send({"hello": 1})
    assert sent == [{"method": "custom", "content": {"hello": 1}}]
    assert view.task is None and not view.running  # no chat turn started
    view.close()
