"""``fork_at_token``: a fork whose last reply takes another token at one position of a reply
and lets the model continue from there.

    fork = await branch.fork_at_token(reply.id, 7, " dragon")

The fork holds the branch's messages before the reply (the same message values) and a new
reply that starts with the reply's first ``index`` tokens followed by ``text``; the model
continues that prefix (``ModelRequest.prefix``: the embedded model completes the chat
template with the reply begun; an OpenAI-compatible server that is known to accept an
assistant prefix, ``prefill=``; the scripted model; elsewhere ``ConfigurationError``). The
original branch is untouched. The fork says where it came from: ``metadata["forked_from"]``
(``branch_id``, ``at``/``index`` of the last shared message, ``message_id``, ``token_index``,
``token``), and so does the new reply (``metadata["forked_from"]``).

While the model continues, the reply streams under its id with the prefix first, so a view
shows the whole reply growing. Stopped with ``on_stop="record"`` the fork keeps the partial
reply (``metadata["stopped"]``); a failure (not a stop) removes the fork from its session.
The request takes ``chat``'s one path (``continue_reply``): the window fit (``fit_context=``
and ``context_window=`` as for ``communicate``; ``ContextWindowError`` before sending when it
is known not to fit), ``CallStart``/``CallEnd`` and thinking blocks.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lion_nb.messages import AssistantResponse, TokenChoice
from lion_nb.models.logprobs import check_logprobs
from lion_nb.operations.chat import continue_reply
from lion_nb.operations.types import ChatParam, check_on_stop
from lion_nb.port.branch_port import BranchPort
from lion_nb.port.lifecycle import observed_run
from lion_nb.tokens import token_choice

if TYPE_CHECKING:
    from lion_nb.models.imodel import iModel
    from lion_nb.session.branch import Branch

__all__ = ["chosen_token", "fork_at_token", "locate_reply"]


def locate_reply(branch: Branch, message: uuid.UUID | str | int) -> tuple[int, AssistantResponse]:
    """``(position, reply)`` of an assistant reply given by id (or its position)."""
    messages = list(branch.messages)
    if isinstance(message, int) and not isinstance(message, bool):
        position = message % len(messages) if messages else 0
        if not messages or not -len(messages) <= message < len(messages):
            raise IndexError(f"no message {message} in the branch ({len(messages)} messages)")
    else:
        wanted = uuid.UUID(str(message))
        found = [i for i, m in enumerate(messages) if m.id == wanted]
        if not found:
            raise KeyError(f"no message {wanted} in the branch")
        position = found[0]
    reply = messages[position]
    if not isinstance(reply, AssistantResponse):
        raise ValueError(f"message {position} is not an assistant reply")
    return position, reply


def chosen_token(reply: AssistantResponse, index: int, text: str) -> TokenChoice | None:
    """The token ``text`` put at position ``index`` of ``reply``: its log-probability among that
    position's alternatives when listed; otherwise the least likely listed one's (an upper
    bound: a token not among the K most likely is at most as likely as the K-th). None for an
    empty ``text`` (the model continues right after the first ``index`` tokens)."""
    if not text:
        return None
    tokens = reply.tokens or []
    top = list(tokens[index].top) if index < len(tokens) else []
    listed = dict(top)
    if text in listed:
        logprob = listed[text]
    elif index < len(tokens) and tokens[index].text == text:
        logprob = tokens[index].logprob
    else:
        logprob = min(listed.values(), default=0.0)
    return token_choice(text, logprob, top)


def _check(reply: AssistantResponse, index: int) -> list[TokenChoice]:
    tokens = reply.tokens
    if tokens is None:
        if index == 0:
            return []
        raise ValueError(
            "this reply was recorded without its tokens; ask for them with logprobs=K "
            "(iModel(..., logprobs=5) or per call) to fork at a token"
        )
    if not 0 <= index <= len(tokens):
        raise IndexError(f"token {index} is outside the reply ({len(tokens)} tokens)")
    return list(tokens)


async def fork_at_token(
    branch: Branch,
    message_id: uuid.UUID | str | int,
    index: int,
    text: str,
    *,
    chat_model: iModel | None = None,
    on_stop: str = "discard",
    on_fork: Callable[[Branch], Any] | None = None,
    **kwargs: Any,
) -> Branch:
    """The fork (see the module). ``kwargs`` are request options (``temperature``,
    ``max_tokens``, ``logprobs``...); ``logprobs`` defaults to the reply's own K, so the fork's
    reply has tokens as its origin had. ``on_fork(fork)`` is called once the fork exists and
    before the model is asked (a conversation shows it, so a view streams the new reply)."""
    position, reply = locate_reply(branch, message_id)
    tokens = _check(reply, index)
    chosen = chosen_token(reply, index, text)
    prefix_tokens = tokens[:index] + ([chosen] if chosen is not None else [])
    prefix = "".join(t.text for t in prefix_tokens)
    if tokens and "logprobs" not in kwargs:
        kwargs["logprobs"] = len(tokens[0].top)
    check_logprobs(kwargs.get("logprobs"))
    fork = _fork_before(branch, position)
    fork.metadata["forked_from"].update(message_id=str(reply.id), token_index=index, token=text)
    if on_fork is not None:
        on_fork(fork)
    port = BranchPort.of(fork)
    try:
        return await _run(port, fork, reply, prefix, prefix_tokens, chat_model, on_stop, kwargs)
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except BaseException:
        if fork.session is not None:
            fork.session.remove_branch(fork)
        raise


def _fork_before(branch: Branch, position: int) -> Branch:
    if position > 0:
        return branch.fork(at=position - 1)
    fork = branch.fork(at=0)
    fork.clear_messages()
    fork.metadata["forked_from"] = {"branch_id": str(branch.id), "at": None, "index": -1}
    return fork


async def _run(
    port: BranchPort,
    fork: Branch,
    reply: AssistantResponse,
    prefix: str,
    prefix_tokens: list[TokenChoice],
    chat_model: iModel | None,
    on_stop: str,
    options: dict[str, Any],
) -> Branch:
    async def run() -> Branch:
        await _continue(port, fork, reply, prefix, prefix_tokens, chat_model, on_stop, options)
        return fork

    return await observed_run(port, "fork_at_token", run())


async def _continue(
    port: BranchPort,
    fork: Branch,
    reply: AssistantResponse,
    prefix: str,
    prefix_tokens: list[TokenChoice],
    chat_model: iModel | None,
    on_stop: str,
    options: dict[str, Any],
) -> None:
    """The model continues the prefix on ``chat``'s request path (window fit, call signals,
    thinking blocks); the reply is recorded saying where it came from."""
    origin = fork.metadata["forked_from"]
    origin = {k: origin[k] for k in ("branch_id", "message_id", "token_index", "token")}
    param = ChatParam(
        imodel=chat_model,
        imodel_kw=options,
        on_stop=check_on_stop(on_stop),
        fit_context=bool(options.pop("fit_context", False)),
        context_window=options.pop("context_window", None),
    )
    await continue_reply(port, prefix, prefix_tokens, param, metadata={"forked_from": origin})
