"""The page protocol has one home (``lion_nb/widgets/protocol.py``): the ops the front-end
module handles, the actions it sends and the kernel's side all agree with it, exactly."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args, get_type_hints

from lion_nb.widgets import protocol
from lion_nb.widgets.front import MODULE_FILES, Front

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lion_nb"


class _Module:
    """The front-end module's source: its files joined, as ``front_module()`` joins them."""

    def read_text(self) -> str:
        return "\n".join((ROOT / "widgets" / name).read_text() for name in MODULE_FILES)


JS = _Module()


def block_after(source: str, start: str) -> str:
    """The text between the ``{`` that ends ``start`` and its matching ``}``."""
    at = source.index(start) + len(start) - 1
    assert source[at] == "{", start
    depth = 0
    for i in range(at, len(source)):
        if source[i] == "{":
            depth += 1
        elif source[i] == "}":
            depth -= 1
            if depth == 0:
                return source[at + 1 : i]
    raise AssertionError(f"unbalanced braces after {start!r}")


def js_ops(source: str) -> set[str]:
    """The ops the module's dispatch table handles (the keys of ``const OPS = {...}``)."""
    table = block_after(source, "const OPS = {")
    return set(re.findall(r"^  (\w+)\s*[:(]", table, re.MULTILINE))


def js_actions(source: str) -> set[str]:
    """The actions the module sends (``model.send({ action: "name", ... })``)."""
    return set(re.findall(r"""\baction:\s*["'](\w+)["']""", source))


def kernel_ops() -> set[str]:
    """Every op the package builds (``{"op": "name", ...}``)."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        found |= set(re.findall(r"""["']op["']:\s*["'](\w+)["']""", path.read_text()))
    return found


def kernel_actions() -> set[str]:
    """Every page action a widget handles (its ``_action_<name>`` methods)."""
    found: set[str] = set()
    for path in (PACKAGE / "widgets").rglob("*.py"):
        found |= set(re.findall(r"def _action_(\w+)\(", path.read_text()))
    return found


def test_the_page_handles_exactly_the_protocols_ops() -> None:
    handled = js_ops(JS.read_text())
    assert handled == set(protocol.OPS), (
        f"handled by the page only: {handled - set(protocol.OPS)}; "
        f"in the protocol only: {set(protocol.OPS) - handled}"
    )


def test_the_kernel_sends_only_the_protocols_ops_and_each_of_them() -> None:
    assert kernel_ops() == set(protocol.OPS)


def test_the_page_sends_exactly_the_actions_the_kernel_handles() -> None:
    sent, handled = js_actions(JS.read_text()), kernel_actions()
    assert sent == set(protocol.ACTIONS), (
        sent - set(protocol.ACTIONS),
        set(protocol.ACTIONS) - sent,
    )
    assert handled == set(protocol.ACTIONS), (
        handled - set(protocol.ACTIONS),
        set(protocol.ACTIONS) - handled,
    )


def test_each_definition_names_itself() -> None:
    for name, typed in protocol.OPS.items():
        assert get_args(get_type_hints(typed)["op"]) == (name,), typed
        assert typed.__doc__, typed
    for name, typed in protocol.ACTIONS.items():
        assert get_args(get_type_hints(typed)["action"]) == (name,), typed
        assert typed.__doc__, typed


def test_the_page_gets_the_names_from_the_kernel_not_from_a_second_list() -> None:
    assert Front.class_traits()["protocol"].default() == protocol.PAGE
    assert protocol.PAGE == {
        "ops": list(protocol.OPS),
        "actions": list(protocol.ACTIONS),
        "chrome": list(protocol.CHROME),
    }
    source = JS.read_text()
    for name in protocol.CHROME:  # the chrome traits are synced, and named in JS only as data
        assert Front.class_traits()[name].metadata.get("sync"), name
        assert f'"{name}"' not in source and f"'{name}'" not in source, name
    assert 'model.get("protocol")' in source


def test_the_check_fails_when_one_side_has_an_op_the_other_lacks() -> None:
    source = JS.read_text()
    extra = source.replace("const OPS = {\n", "const OPS = {\n  wobble: (view, op) => {},\n", 1)
    assert js_ops(extra) == set(protocol.OPS) | {"wobble"}
    assert js_ops(extra) != set(protocol.OPS)
    fewer = re.sub(r"^  clip: ", "  // clip: ", source, count=1, flags=re.MULTILINE)
    assert js_ops(fewer) == set(protocol.OPS) - {"clip"}
    sends = source + '\nmodel.send({ action: "wobble" });\n'
    assert js_actions(sends) - set(protocol.ACTIONS) == {"wobble"}


def test_the_module_docstring_is_the_reference() -> None:
    doc = protocol.__doc__ or ""
    for needle in ("seq", "resync", "ENVELOPE_BYTES", "protocol", "_action_<name>"):
        assert needle in doc, needle
    channel_doc = (PACKAGE / "widgets" / "channel.py").read_text().split('"""')[1]
    assert "lion_nb.widgets.protocol" in channel_doc
    assert '{"op": "put"' not in channel_doc  # the ops are listed once, in protocol.py


def test_an_action_outside_the_protocol_is_not_handled() -> None:
    class Probe(Front):  # type: ignore[misc]
        called = False

        def _action_wobble(self, _content: dict[str, object]) -> None:
            Probe.called = True

    view = Probe()
    view._on_page(view, {"action": "wobble"}, [])
    assert not Probe.called  # not in protocol.ACTIONS: the page may not ask for it
    view.close()


def test_sealing_is_an_op_on_named_parts_not_string_surgery() -> None:
    import lion_nb.render.html as render_html

    assert not hasattr(render_html, "split_card")  # no rendered card is cut apart
    source = JS.read_text()
    assert "</div>" not in source and "<div" not in source  # the page parses no card markup
    fields = get_type_hints(protocol.SealOp)
    assert {"cls", "attrs", "head", "thinking", "add", "after"} <= set(fields)
    assert "tag" not in fields
