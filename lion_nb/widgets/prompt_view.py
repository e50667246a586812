"""The prompt as the model reads it: "What the model read" under a reply of the chat view or a
row of the progression inspector, and ``PromptView`` on its own.

    await lion_nb.prompt_view(model, "What is the capital of France?")

Every token of the prompt (``iModel.tokenize``: the chat template applied) is a chip tinted by
the message it spells, the template's scaffolding neutral, special tokens outlined with their
text, under a legend and the count against the model's window ("1,234 of 8,192 tokens"). The
page draws it (``widgets/prompt.js``, a few hundred chips a frame, so a long prompt opens at
once) from one ``prompt_tokens`` op (``widgets.protocol``): the texts, the message of each
token, the special ones, the roles and the window. A model that cannot tokenize (only the
embedded model and llama.cpp's llama-server can) gets a view that says so, in plain words,
instead of an error.

What a reply read is the request it was generated from: the branch's messages before it,
compiled as the request compiled them (``render.turns.turn_payload``: the same
``compile_messages`` the operations use, without what a ``fit_context`` cut left out), read by
the branch's model. ``PromptReader`` answers the page's ``prompt_tokens`` action for a view
(the chat view holds one as a panel, ``PromptPanel``; the inspector one for its rows); the
tokens of a turn are read once and kept (a recorded turn's request does not change).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lion_nb.errors import LionError
from lion_nb.models.prompt_tokens import messages_of
from lion_nb.render.prompt_tokens_html import (
    HOST_HTML,
    TITLE,
    count_text,
    prompt_note_html,
    prompt_tokens_html,
)
from lion_nb.render.turns import turn_payload
from lion_nb.widgets.chat_host import Action, ChatHost, in_background, index_of
from lion_nb.widgets.front import Front
from lion_nb.widgets.protocol import PromptTokensOp, prompt_tokens_op

if TYPE_CHECKING:
    from lion_nb.models.prompt_tokens import PromptToken
    from lion_nb.widgets.channel import Channel

__all__ = ["PromptPanel", "PromptReader", "PromptView", "prompt_view", "read_prompt"]

NOT_RECORDED = (
    "This reply is not in the branch yet (still being written, or it ended unrecorded): "
    "what the model read opens once the branch holds the reply."
)


def tokens_op(
    key: str, tokens: Sequence[PromptToken], roles: Sequence[str], window: int | None
) -> PromptTokensOp:
    """The ``prompt_tokens`` op that shows ``tokens``."""
    return prompt_tokens_op(
        key,
        t=[t.text for t in tokens],
        m=[-1 if t.message is None else t.message for t in tokens],
        sp=[i for i, t in enumerate(tokens) if t.special],
        roles=list(roles),
        window=window,
    )


def roles_of(messages: Sequence[dict[str, Any]]) -> list[str]:
    return [str(m.get("role", "message")) for m in messages]


async def read_prompt(model: Any, messages: list[dict[str, Any]]) -> list[PromptToken] | str:
    """``model.tokenize(messages)``, or why it could not be read, in plain words (a model that
    cannot tokenize says which can)."""
    if model is None:
        return "There is no model to ask: give the branch a chat model."
    try:
        tokens: list[PromptToken] = await model.tokenize(messages)
    except LionError as error:
        said = str(error)
        return f"This model cannot show what it read. {said[:1].upper()}{said[1:]}"
    except Exception as error:  # a view says what failed; it never raises into the page
        return f"Could not read the prompt: {error}"
    return tokens


class PromptReader:
    """Answers a view's ``prompt_tokens`` action: reads the prompt in the background and
    sends it to the page on ``channel()``; what it read is kept per turn (``turn``: the id of
    the message the prompt was sent for)."""

    def __init__(
        self,
        channel: Callable[[], Channel],
        model: Callable[[], Any],
        show_error: Callable[[BaseException], None],
    ) -> None:
        self._channel = channel
        self._model = model
        self._show_error = show_error
        self.read: dict[uuid.UUID, tuple[list[PromptToken] | str, list[str], int | None]] = {}

    def op(self, key: str, turn: uuid.UUID) -> PromptTokensOp | None:
        """The op for part ``key`` from what was read for ``turn``, if it was."""
        found = self.read.get(turn)
        if found is None:
            return None
        tokens, roles, window = found
        if isinstance(tokens, str):
            return prompt_tokens_op(key, note=tokens)
        return tokens_op(key, tokens, roles, window)

    def ask(self, key: str, turn: uuid.UUID, messages: list[dict[str, Any]] | str) -> None:
        """Send the page part ``key``'s prompt: ``messages`` (or why there is none), read once
        per ``turn``."""
        known = self.op(key, turn)
        if known is not None:
            self._channel().push(known)
            return
        if isinstance(messages, str):
            self.read[turn] = (messages, [], None)
            self._channel().push(prompt_tokens_op(key, note=messages))
            return

        async def go() -> None:
            model = self._model()
            found = await read_prompt(model, messages)
            window = getattr(model, "context_window", None) if model is not None else None
            self.read[turn] = (found, roles_of(messages), window)
            op = self.op(key, turn)
            if op is not None:
                self._channel().push(op)

        in_background(self._show_error, go)


def turn_messages(messages: Any, index: int) -> list[dict[str, Any]] | str:
    """The messages the request that produced ``messages[index]`` sent, compiled as the
    request compiled them; or why there are none (a message that is no model turn)."""
    payload = turn_payload(messages, index)
    if payload is None or not isinstance(payload.get("messages"), list):
        return f"Message {index} is not a model turn: no request was sent for it."
    return list(payload["messages"])


class PromptPanel:
    """ "What the model read" on the chat view's replies: a panel ``BranchView`` holds (it
    knows the view only as a ``ChatHost``); the page action ``prompt_tokens``."""

    def __init__(self, host: ChatHost) -> None:
        self._host = host
        self.reader = PromptReader(
            lambda: host.channel, lambda: host.branch.chat_model_or_none, host.show_error
        )

    def actions(self) -> dict[str, Action]:
        return {"prompt_tokens": self._action_prompt_tokens}

    def _action_prompt_tokens(self, content: dict[str, Any]) -> None:
        index = index_of(self._host.branch, content)
        if index is None:  # a reply still streaming, or one that ended unrecorded
            key = str(content.get("key", ""))
            self._host.channel.push(prompt_tokens_op(key, note=NOT_RECORDED))
            return
        messages = self._host.branch.messages
        turn = messages[index].id
        self.reader.ask(str(content.get("key", "")), turn, turn_messages(messages, index))


class PromptView(Front):
    """The prompt as the model reads it, token by token: each token a chip tinted by the
    message it spells, the chat template's own tokens neutral, special tokens outlined, under
    the count against the model's window. ``prompt_view(model, ...)`` reads the tokens and
    makes one; the chat view and the inspector show the same under a reply ("What the model
    read").

    Args:
        tokens: The tokens of ``model.tokenize(messages)``.
        messages: The messages they were read from (their roles tint the chips).
        window: The model's context window in tokens, for the count.
        note: Why there are no tokens (a model that cannot tokenize), shown instead.
        title: The heading.
    """

    def __init__(
        self,
        tokens: Sequence[PromptToken] = (),
        messages: Any = (),
        *,
        window: int | None = None,
        note: str | None = None,
        title: str = TITLE,
    ) -> None:
        super().__init__(kind="prompt")
        self.tokens = list(tokens)
        self.roles = roles_of(messages_of(messages)) if messages else []
        self.window = window
        self.note = note
        self.heading = title
        self.sync_state(send=True)  # the comm opened with empty parts
        self._ready = True

    def state_parts(self) -> list[list[str]]:
        """The one part: an empty host the page fills with the chips (it asks for them with
        its ``prompt_tokens`` action, so the tokens are not part of the synced state)."""
        return [["prompt", HOST_HTML]]

    def _action_prompt_tokens(self, content: dict[str, Any]) -> None:
        key = str(content.get("key", "prompt"))
        if self.note is not None:
            self.channel.push(prompt_tokens_op(key, note=self.note))
        else:
            self.channel.push(tokens_op(key, self.tokens, self.roles, self.window))

    def static_html(self) -> str:
        """The tokens as chips in HTML for a saved notebook, or the note saying why there
        are none."""
        if self.note is not None:
            return prompt_note_html(self.note, title=self.heading)
        return prompt_tokens_html(self.tokens, self.roles, window=self.window, title=self.heading)

    def static_text(self) -> str:
        """The count against the window, then the prompt's text as the tokens spell it (or
        the note)."""
        if self.note is not None:
            return f"{self.heading}: {self.note}"
        return f"{self.heading}: {count_text(len(self.tokens), self.window)}\n" + "".join(
            t.text for t in self.tokens
        )

    def __repr__(self) -> str:
        return f"<PromptView {count_text(len(self.tokens), self.window)}>"


async def prompt_view(model: Any, messages_or_text: Any, *, title: str = TITLE) -> PromptView:
    """A ``PromptView`` of the prompt ``model`` reads for ``messages_or_text``, token by token:
    the chat template applied (``iModel.tokenize``). A text is one user turn; or give a list
    of ``{"role", "content"}`` dicts. Only the embedded model and llama.cpp's llama-server can
    tokenize; any other model gives a view that says so, in plain words, not an error.

    Example:
        ```python
        await lion_nb.prompt_view(iModel(provider="local"), "What is the capital of France?")
        ```
    """
    messages = messages_of(messages_or_text)
    found = await read_prompt(model, messages)
    window = getattr(model, "context_window", None)
    if isinstance(found, str):
        return PromptView(messages=messages, window=window, note=found, title=title)
    return PromptView(found, messages, window=window, title=title)
