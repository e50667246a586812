"""What a model sees: the request compiled for any turn of a branch, and what the next turn
will send, in tokens against the model's context window.

``turn_payload`` recompiles the progression up to a turn with ``lion_nb.compile`` (the same
function the operations use to build requests), so it shows exactly what was sent when the
turn used the branch's own history. ``next_turn`` counts tokens with the provider's offline
tokenizer when it has one (``count_tokens(text)``) and otherwise gives a labelled estimate;
nothing is ever downloaded, and no provider is constructed just to ask.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lion_nb.compile import cli_prompt, compile_messages
from lion_nb.messages import ActionRequest, AssistantResponse, Instruction, RoledMessage
from lion_nb.render.text import visible_controls

__all__ = [
    "KNOWN_WINDOWS",
    "PAYLOAD_SHOWN",
    "NextTurn",
    "context_window",
    "is_cli_model",
    "next_turn",
    "next_turn_html",
    "payload_json",
    "token_counter",
    "turn_payload",
]

PAYLOAD_SHOWN = 200  # payload entries shown in the detail; turn_payload() returns them all

# Context windows of well-known models, by name prefix (providers that know better say so
# through ``context_window`` / ``n_ctx``; an unknown window is shown as unknown, not guessed).
KNOWN_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude", 200_000),
    ("sonnet", 200_000),
    ("opus", 200_000),
    ("haiku", 200_000),
    ("gemini-2.5", 1_048_576),
    ("smollm2", 8_192),
)


def _e(value: Any) -> str:
    return html.escape(visible_controls(str(value)), quote=True)


# ----- what the model saw ---------------------------------------------------------------------
def is_cli_model(model: Any) -> bool:
    """Without constructing a provider (which may load weights or open a client)."""
    if model is None:
        return False
    from lion_nb.models.imodel import CLI_PROVIDERS

    if model.provider_name in CLI_PROVIDERS or model.request_defaults.get("cli"):
        return True
    return bool(getattr(model._provider, "is_cli", False))


def _turn_start(messages: Sequence[RoledMessage] | Any, index: int) -> int | None:
    """Index of the first message *not* sent in the request that produced ``messages[index]``
    (the request holds ``messages[:start]``, or ``[:index + 1]`` for an instruction)."""
    msg = messages[index]
    if isinstance(msg, Instruction):
        return index + 1
    if isinstance(msg, AssistantResponse):
        return index
    if isinstance(msg, ActionRequest):
        j = index
        while j > 0 and isinstance(messages[j - 1], ActionRequest):
            j -= 1
        if j > 0 and isinstance(messages[j - 1], AssistantResponse):
            j -= 1  # the requests belong to the assistant turn just before them
        return j
    return None  # a system message or a tool result is not a model turn


def turn_payload(
    messages: Sequence[RoledMessage] | Any, index: int, *, cli: bool = False
) -> dict[str, Any] | None:
    """What the model received for the turn of ``messages[index]``, compiled from the
    progression: ``{"messages": [...]}`` (chat-completions) or, for a CLI agent, the one
    prompt it was sent. None when the message is not a model turn."""
    stop = _turn_start(messages, index)
    if stop is None:
        return None
    sent = messages[:stop]
    if cli:
        last = next((m for m in reversed(sent) if isinstance(m, Instruction)), None)
        system = sent[0].text if sent and sent[0].role == "system" else None
        return {
            "prompt": cli_prompt(last) if last is not None else "",
            "system_prompt": system,
            "note": "a CLI agent keeps its own history",
        }
    return {"messages": compile_messages(sent)}


def payload_json(payload: dict[str, Any] | None, *, shown: int = PAYLOAD_SHOWN) -> tuple[str, str]:
    """Pretty JSON for display and a note about what was left out (very long payloads)."""
    if payload is None:
        return "", ""
    note = ""
    items = payload.get("messages")
    if isinstance(items, list) and len(items) > shown:
        note = (
            f"showing the last {shown} of {len(items):,} messages; "
            "lion_nb.render.turns.turn_payload(branch.messages, i) returns all"
        )
        payload = {**payload, "messages": items[-shown:]}
    return json.dumps(payload, indent=2, ensure_ascii=False, default=str), note


# ----- the next turn ---------------------------------------------------------------------------
def context_window(model: Any) -> int | None:
    """The model's context window in tokens, when known."""
    if model is None:
        return None
    value = model.request_defaults.get("context_window") or model.request_defaults.get("n_ctx")
    if isinstance(value, int):
        return value
    provider = model._provider
    for attr in ("context_window", "n_ctx"):
        value = getattr(provider, attr, None)
        if callable(value):
            try:
                value = value()
            except Exception:  # a display helper must not fail on a provider quirk
                value = None
        if isinstance(value, int) and value > 0:
            return value
    if provider is None:  # not constructed yet: the constructor's default says it
        value = _constructor_default(model.provider_name, ("context_window", "n_ctx"))
        if value is not None:
            return value
    name = (model.model or model.provider_name or "").lower()
    for prefix, window in KNOWN_WINDOWS:
        if name.startswith(prefix) or f"/{prefix}" in name or name.endswith(prefix):
            return window
    return None


def _provider_class(provider_name: str) -> type | None:
    from importlib import import_module

    from lion_nb.models.imodel import PROVIDERS

    spec = PROVIDERS.get(provider_name)
    if spec is None:
        return None
    try:
        return getattr(import_module(spec.module), spec.cls)
    except (ImportError, AttributeError):
        return None


def _constructor_default(provider_name: str, names: tuple[str, ...]) -> int | None:
    import inspect

    cls = _provider_class(provider_name)
    if cls is None:
        return None
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return None
    for name in names:
        default = params[name].default if name in params else None
        if isinstance(default, int) and not isinstance(default, bool) and default > 0:
            return default
    return None


def token_counter(model: Any) -> Callable[[str], int] | None:
    """The provider's offline tokenizer (``count_tokens(text)``), if it has one. The provider
    class is checked first so a model without one is never constructed for this."""
    if model is None:
        return None
    cls = _provider_class(model.provider_name)
    if cls is None or not callable(getattr(cls, "count_tokens", None)):
        return None
    return model.provider.count_tokens


@dataclass(frozen=True, slots=True)
class NextTurn:
    messages: int  # chat-completions messages the next request would carry
    tokens: int
    exact: bool  # counted by the provider's tokenizer, not estimated
    window: int | None
    cli: bool
    recorded: int = 0  # branch messages they are compiled from (tool calls merge into turns)

    @property
    def fraction(self) -> float | None:
        return self.tokens / self.window if self.window else None


def _payload_texts(payload: list[dict[str, Any]]) -> list[str]:
    texts = []
    for item in payload:
        content = item.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p.get("text", "") for p in content if isinstance(p, dict))
        for call in item.get("tool_calls", ()):
            texts.append(call["function"]["name"] + call["function"]["arguments"])
    return texts


def next_turn(messages: Sequence[RoledMessage] | Any, model: Any) -> NextTurn:
    """What the next turn sends (every message, compiled; a CLI agent gets only the new
    prompt) and its size in tokens against the context window."""
    from lion_nb.operations.tokens import estimate_tokens

    cli = is_cli_model(model)
    if cli:
        texts: list[str] = []
        count = 0
    else:
        payload = compile_messages(messages)
        texts = _payload_texts(payload)
        count = len(payload)
    counter = None
    try:
        counter = token_counter(model)
    except Exception:  # a broken provider constructor must not break the inspector
        counter = None
    if counter is not None:
        tokens = sum(counter(t) for t in texts if t)
        exact = True
    else:
        tokens = estimate_tokens(texts)
        exact = False
    return NextTurn(
        messages=count,
        tokens=tokens,
        exact=exact,
        window=context_window(model),
        cli=cli,
        recorded=len(messages),
    )


def next_turn_html(turn: NextTurn) -> str:
    if turn.cli:
        return (
            '<div class="lion-meta lion-next-turn">Next turn: a CLI agent receives only the '
            "new prompt (it keeps its own history).</div>"
        )
    kind = "exact (provider tokenizer)" if turn.exact else "estimate, ~4 characters per token"
    window = ""
    if turn.window:
        pct = 100.0 * turn.tokens / turn.window
        over = " — over the window" if turn.tokens > turn.window else ""
        window = f" of a {turn.window:,}-token context window ({pct:.1f}%{over})"
    else:
        window = " (context window unknown)"
    source = ""
    if turn.recorded and turn.recorded != turn.messages:
        source = f" (all {turn.recorded:,} recorded, tool calls merged into their turns)"
    elif turn.recorded:
        source = " (every recorded message)"
    return (
        f'<div class="lion-meta lion-next-turn">Next turn sends {turn.messages:,} '
        f"message{'s' if turn.messages != 1 else ''}{_e(source)} plus the new instruction: "
        f"{turn.tokens:,} tokens so far "
        f'<span class="lion-tl-kind">({_e(kind)})</span>{_e(window)}.</div>'
    )
