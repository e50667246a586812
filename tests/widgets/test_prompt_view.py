""" "What the model read" (``widgets/prompt_view.py``): the page's ``prompt_tokens`` action
answered with the prompt a reply was generated from, token by token, as one op (texts, the
message of each token, the special ones, the roles, the window); a model that cannot tokenize
answered in plain words; the inspector's rows and ``PromptView`` / ``prompt_view`` alike."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import lion_nb
from lion_nb import Branch, iModel
from lion_nb.models.imodel import local_model_available
from lion_nb.models.prompt_tokens import PromptToken
from lion_nb.widgets.chat_view import BranchView
from lion_nb.widgets.inspector import ProgressionInspector
from lion_nb.widgets.prompt_view import PromptView, prompt_view, turn_messages
from tests.support.waiting import until

TOKENS = [
    PromptToken("<|im_start|>", 1, True, None),
    PromptToken("user\n", 4093, False, None),
    PromptToken("Hi", 9000, False, 0),
    PromptToken("<|im_end|>", 2, True, None),
]


def prompt_ops(sent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [op for msg in sent for op in msg["ops"] if op["op"] == "prompt_tokens"]


async def settled(sent: list[dict[str, Any]], n: int = 1) -> None:
    await until(lambda: len(prompt_ops(sent)) >= n, what=f"{n} prompt_tokens op(s)")


async def test_a_model_that_cannot_tokenize_is_said_in_plain_words() -> None:
    branch = Branch(system="Be brief.", chat_model=iModel(provider="scripted", replies=["Hi!"]))
    view = BranchView(branch)
    sent: list[dict[str, Any]] = []
    view.channel._send = sent.append
    await view.asend("Hello")
    reply = branch.messages[-1]
    view._on_page(view, {"action": "prompt_tokens", "key": str(reply.id)}, [])
    await settled(sent)
    [op] = prompt_ops(sent)
    assert op["key"] == str(reply.id) and "t" not in op
    assert op["note"].startswith("This model cannot show what it read. The 'scripted' provider")
    assert "iModel(provider='local')" in op["note"] and "llama-server" in op["note"]
    view.close()


async def test_a_reply_the_branch_does_not_hold_yet_says_so() -> None:
    """The control is on every reply card (as Copy is): a reply still streaming, or one that
    ended unrecorded, answers with a sentence, never with silence."""
    view = BranchView(Branch(chat_model=iModel(provider="scripted", replies=["Hi!"])))
    sent: list[dict[str, Any]] = []
    view.channel._send = sent.append
    view._on_page(view, {"action": "prompt_tokens", "key": "L1"}, [])
    await settled(sent)
    [op] = prompt_ops(sent)
    assert op["key"] == "L1" and "t" not in op
    assert op["note"].startswith("This reply is not in the branch yet")
    view.close()


def test_a_reply_read_the_messages_before_it_as_the_request_compiled_them() -> None:
    branch = Branch(system="Be brief.")
    branch.add_message(lion_nb.messages.Instruction(instruction="First"))
    branch.add_message(lion_nb.messages.AssistantResponse(response="One."))
    branch.add_message(lion_nb.messages.Instruction(instruction="Second"))
    branch.add_message(lion_nb.messages.AssistantResponse(response="Two."))
    sent = turn_messages(branch.messages, 4)
    assert isinstance(sent, list)
    assert [(m["role"], m["content"]) for m in sent] == [
        ("system", "Be brief."),
        ("user", "First"),
        ("assistant", "One."),
        ("user", "Second"),
    ]
    assert turn_messages(branch.messages, 0) == (
        "Message 0 is not a model turn: no request was sent for it."
    )


async def test_the_standalone_view_sends_its_tokens_when_the_page_asks() -> None:
    view = PromptView(TOKENS, [{"role": "user", "content": "Hi"}], window=8192)
    sent: list[dict[str, Any]] = []
    view.channel._send = sent.append
    assert view.parts == [["prompt", '<div class="lion-read-host"></div>']]
    view._on_page(view, {"action": "prompt_tokens", "key": "prompt"}, [])
    await settled(sent)
    [op] = prompt_ops(sent)
    assert op == {
        "op": "prompt_tokens",
        "key": "prompt",
        "t": ["<|im_start|>", "user\n", "Hi", "<|im_end|>"],
        "m": [-1, -1, 0, -1],
        "sp": [0, 3],
        "roles": ["user"],
        "window": 8192,
    }
    assert "4 of 8,192 tokens" in view.static_html()
    assert view.static_text().startswith("What the model read: 4 of 8,192 tokens")
    view.close()


async def test_prompt_view_on_a_model_that_cannot_tokenize_says_so() -> None:
    view = await lion_nb.prompt_view(iModel(provider="scripted", replies=[]), "Hello")
    assert isinstance(view, PromptView) and view.tokens == []
    assert view.note is not None and "cannot show what it read" in view.note
    assert "lion-read-note" in view.static_html()
    sent: list[dict[str, Any]] = []
    view.channel._send = sent.append
    view._on_page(view, {"action": "prompt_tokens", "key": "prompt"}, [])
    await settled(sent)
    assert prompt_ops(sent)[0]["note"] == view.note
    view.close()


async def test_the_inspectors_row_reads_what_its_turn_sent() -> None:
    branch = Branch(system="Be brief.", chat_model=iModel(provider="scripted", replies=["Hi!"]))
    await branch.communicate("Hello")
    inspector = ProgressionInspector(branch)
    sent: list[dict[str, Any]] = []
    inspector.front.channel._send = sent.append
    front = inspector.front
    front._on_page(front, {"action": "prompt_tokens", "key": "d2"}, [])
    front._on_page(front, {"action": "prompt_tokens", "key": "d9"}, [])  # no such message
    front._on_page(front, {"action": "prompt_tokens", "key": "r2"}, [])  # not a detail
    await settled(sent)
    await asyncio.sleep(0.05)
    [op] = prompt_ops(sent)
    assert op["key"] == "d2" and "cannot show what it read" in op["note"]
    front._on_page(front, {"action": "prompt_tokens", "key": "d0"}, [])  # the system message
    await settled(sent, 2)
    assert prompt_ops(sent)[1]["note"] == (
        "Message 0 is not a model turn: no request was sent for it."
    )
    inspector.close()


needs_local = pytest.mark.skipif(
    not local_model_available(), reason="the embedded model (lion_nb[local]) is not installed"
)


@needs_local
@pytest.mark.local_model
async def test_a_reply_on_the_embedded_model_shows_the_prompt_it_read() -> None:
    model = iModel(provider="local", temperature=0, seed=0, max_tokens=4)
    branch = Branch(system="You are terse.", chat_model=model)
    view = BranchView(branch)
    sent: list[dict[str, Any]] = []
    view.channel._send = sent.append
    await view.asend("Name a colour.")
    reply = branch.messages[-1]
    view._on_page(view, {"action": "prompt_tokens", "key": str(reply.id)}, [])
    await settled(sent)
    [op] = prompt_ops(sent)
    assert "".join(op["t"]) == (
        "<|im_start|>system\nYou are terse.<|im_end|>\n"
        "<|im_start|>user\nName a colour.<|im_end|>\n<|im_start|>assistant\n"
    )
    assert op["roles"] == ["system", "user"]
    assert "".join(t for t, m in zip(op["t"], op["m"], strict=True) if m == 1) == ("Name a colour.")
    assert [op["t"][i] for i in op["sp"]] == ["<|im_start|>", "<|im_end|>"] * 2 + ["<|im_start|>"]
    assert op["window"] == model.context_window and op["window"]
    # read once per turn: asked again, answered from what was read
    view._on_page(view, {"action": "prompt_tokens", "key": str(reply.id)}, [])
    await settled(sent, 2)
    assert prompt_ops(sent)[1] == op
    # the standalone view reads the same prompt
    alone = await prompt_view(
        model,
        [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Name a colour."},
        ],
    )
    assert [t.text for t in alone.tokens] == op["t"]
    view.close()
    alone.close()
