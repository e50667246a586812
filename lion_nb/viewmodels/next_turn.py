"""What the next turn of a branch will send, in tokens against the model's context window:
the facts of a model and its provider a view shows, computed here and handed to the renderer
(``render.turns.next_turn_html``) as data.

Tokens are counted with the provider's offline tokenizer when the provider is constructed and
has one (``count_tokens(text)``), and otherwise estimated; nothing is ever downloaded, and no
provider is constructed just to ask (``iModel.provider_or_none``): counting never loads
llama.cpp on a machine that only replays a cassette.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lion_nb.compile import compile_messages
from lion_nb.messages import RoledMessage

__all__ = [
    "KNOWN_WINDOWS",
    "NextTurn",
    "context_window",
    "is_cli_model",
    "next_turn",
    "payload_texts",
    "token_counter",
]

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


def is_cli_model(model: Any) -> bool:
    """Without constructing a provider (which may load weights or open a client)."""
    if model is None:
        return False
    from lion_nb.models.imodel import CLI_PROVIDERS

    if model.provider_name in CLI_PROVIDERS or model.request_defaults.get("cli"):
        return True
    return bool(getattr(model.provider_or_none, "is_cli", False))


def context_window(model: Any) -> int | None:
    """The model's context window in tokens, when known."""
    if model is None:
        return None
    value = model.request_defaults.get("context_window") or model.request_defaults.get("n_ctx")
    if isinstance(value, int):
        return value
    provider = model.provider_or_none
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
    """The provider's offline tokenizer (``count_tokens(text)``), if the model's provider is
    constructed already and has one. A provider is never constructed for this: counting must
    not load llama.cpp and the weights (a machine replaying a cassette may have neither), so
    until the model is used the count is an estimate."""
    if model is None:
        return None
    counter = getattr(model.provider_or_none, "count_tokens", None)
    return counter if callable(counter) else None


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


def payload_texts(payload: list[dict[str, Any]]) -> list[str]:
    """The texts of a compiled request (contents, tool-call names and arguments) to count."""
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
        texts = payload_texts(payload)
        count = len(payload)
    counter = token_counter(model)
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
