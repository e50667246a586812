"""A request against the model's context window: what it costs, where to cut it so it fits,
and the error that says what to do when it cannot be sent.

Every model request goes through ``operations.chat``, which asks here before sending:

* ``fit_context=True`` (a verb option, carried by ``ChatParam``): the system message and the
  most recent whole turns that fit are sent (``progression``); a cut never separates a tool
  call from its result. The recorded instruction says which messages were left out
  (``metadata["context_fit"]``), so a view marks the cut from the branch alone.
* Without it, a request known not to fit (its prompt alone exceeds the window) raises
  ``ContextWindowError`` before anything is sent, naming ``fit_context=True`` as the fix.
* A provider that reports an overflow (an unknown window, an estimate that was off) gets the
  same error, with the provider's words in it.

The window and the tokenizer come from the model (``iModel.context_window``,
``iModel.token_counter()``). Tokens are counted exactly with the provider's own tokenizer when
the provider exists already, otherwise estimated and trusted only with a margin
(``ESTIMATE_MARGIN``). Each compiled message also costs its chat-template frame
(``MESSAGE_OVERHEAD``). Room is kept for the reply: the request's ``max_tokens`` when known,
else a quarter of the window, at most half of it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from lion_nb.compile import compile_messages
from lion_nb.errors import ContextWindowError, ExecutionError
from lion_nb.messages import Instruction, RoledMessage, System
from lion_nb.models.capabilities import remembered
from lion_nb.models.probe import server_url
from lion_nb.tokens import NextTurn, estimate_tokens

__all__ = [
    "ESTIMATE_MARGIN",
    "MESSAGE_OVERHEAD",
    "ContextPlan",
    "is_overflow",
    "max_tokens_of",
    "next_turn",
    "payload_texts",
    "plan_context",
    "reported_window",
    "window_error",
    "window_label",
]

MESSAGE_OVERHEAD = 5  # <|im_start|>role\n ... <|im_end|>\n, and the like
REPLY_PRIMER = 3  # the assistant header the template adds after the last message
ESTIMATE_MARGIN = 1.15  # an estimated count is trusted only this far
FIX = "fit_context=True"
_OVERFLOW = re.compile(
    r"context (?:window|length)|maximum context|context_length_exceeded|too many tokens"
    r"|prompt is too long|exceeds? (?:the )?(?:model'?s? )?(?:context|maximum)"
    r"|exceed_context_size|available context size",  # llama-server: one slot's window
    re.IGNORECASE,
)
# llama-server's words: "request (700 tokens) exceeds the available context size (512 tokens)"
_SLOT_SIZE = re.compile(r"available context size \((\d+) tokens\)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ContextPlan:
    """The next request against the window. ``cut``: index in the messages planned over of
    the first message sent after the system message (None: everything is sent);
    ``progression``: the message ids to send (None: all); ``tokens``: what is sent, the
    instruction included; ``full_tokens``: what sending everything costs; ``reserve``: room
    kept for the reply; ``fits``: the instruction (with the system message) fits at all."""

    window: int | None
    tokens: int
    full_tokens: int
    exact: bool
    reserve: int
    recorded: int = 0  # the messages the plan was made over
    cut: int | None = None
    progression: tuple[uuid.UUID, ...] | None = None
    fits: bool = True

    @property
    def omitted(self) -> int:
        """How many of the messages the request leaves out."""
        return 0 if self.progression is None else self.recorded - len(self.progression)

    @property
    def fraction(self) -> float | None:
        """What is sent as a share of the window (the gauge)."""
        return self.tokens / self.window if self.window else None

    @property
    def overflows(self) -> bool:
        """Sending everything is known not to fit: the prompt alone exceeds the window
        (counted, or estimated even after allowing for the estimate's margin)."""
        if not self.window:
            return False
        full = self.full_tokens if self.exact else self.full_tokens / ESTIMATE_MARGIN
        return full >= self.window


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


def _counter(model: Any) -> tuple[Callable[[str], int], bool]:
    count = model.token_counter() if model is not None else None
    if count is not None:
        return count, True
    return (lambda text: estimate_tokens((text,))), False


def _cost(messages: Sequence[RoledMessage], count: Callable[[str], int]) -> int:
    payload = compile_messages(messages)
    return sum(count(t) for t in payload_texts(payload) if t) + MESSAGE_OVERHEAD * len(payload)


def _turn_starts(messages: Sequence[RoledMessage], first: int) -> list[int]:
    """Indices where a turn begins: the first message after the system one, and every
    instruction (a cut never separates a tool call from its result)."""
    starts = [first] if first < len(messages) else []
    starts += [i for i in range(first + 1, len(messages)) if isinstance(messages[i], Instruction)]
    return starts


def max_tokens_of(model: Any, options: dict[str, Any] | None = None) -> int | None:
    """The reply's token limit for a request: its options, else the model's defaults, else
    the constructed provider's."""
    provider = getattr(model, "provider_or_none", None)
    for source in (
        options or {},
        getattr(model, "request_defaults", None) or {},
        getattr(provider, "defaults", None) or {},
    ):
        value = source.get("max_tokens") if isinstance(source, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def plan_context(
    messages: Sequence[RoledMessage],
    model: Any,
    *,
    instruction: Instruction | str | None = None,
    max_tokens: int | None = None,
    window: int | None = None,
) -> ContextPlan:
    """The next request over ``messages`` plus ``instruction``, cut to the most recent turns
    that fit ``window`` (default: the model's, when known). A CLI agent is never cut."""
    if window is None and model is not None:
        window = model.context_window
    count, exact = _counter(model)
    messages = list(messages)
    first = 1 if messages and isinstance(messages[0], System) else 0
    system_cost = _cost(messages[:first], count)
    if isinstance(instruction, Instruction):
        ins_cost = _cost([instruction], count)
    else:
        ins_cost = (count(instruction) if instruction else 0) + MESSAGE_OVERHEAD
    starts = _turn_starts(messages, first)
    bounds = [*starts, len(messages)]
    turn_costs = [_cost(messages[a:b], count) for a, b in pairwise(bounds)]
    full = system_cost + sum(turn_costs) + ins_cost + REPLY_PRIMER
    reserve = max_tokens if max_tokens else (window // 4 if window else 0)
    n = len(messages)
    if window is None or (model is not None and model.is_cli):
        return ContextPlan(window, full, full, exact, reserve, n)
    reserve = min(reserve, window // 2)
    budget = (window - reserve) / (1.0 if exact else ESTIMATE_MARGIN)
    if full <= budget:
        return ContextPlan(window, full, full, exact, reserve, n)
    kept = tuple(m.id for m in messages[:first])
    sent = full
    for j in range(len(starts)):  # drop the oldest turns until the rest fits
        sent -= turn_costs[j]
        if sent <= budget:
            cut = starts[j + 1] if j + 1 < len(starts) else n
            ids = kept + tuple(m.id for m in messages[cut:])
            return ContextPlan(window, sent, full, exact, reserve, n, cut, ids)
    return ContextPlan(window, sent, full, exact, reserve, n, n, kept, fits=False)


def cut_record(plan: ContextPlan, messages: Sequence[RoledMessage]) -> dict[str, Any]:
    """What the recorded instruction keeps of a cut (``metadata["context_fit"]``): the ids
    left out, the first one sent after the system message, the figures."""
    sent = set(plan.progression or ())
    return {
        "omitted": [str(m.id) for m in messages if m.id not in sent],
        "first_sent": str(messages[plan.cut].id)
        if plan.cut is not None and plan.cut < len(messages)
        else None,
        "tokens": plan.tokens,
        "window": plan.window,
        "exact": plan.exact,
    }


def is_overflow(error: BaseException) -> bool:
    """Whether a provider's error says the request exceeded its context window."""
    return isinstance(error, ExecutionError) and bool(_OVERFLOW.search(str(error)))


def reported_window(error: BaseException) -> int | None:
    """The window a server's overflow report names (llama-server: one slot's), if any."""
    found = _SLOT_SIZE.search(str(error))
    return int(found.group(1)) if found else None


def window_label(label: str, model: Any, window: int | None) -> str:
    """``label`` (the model), saying when ``window`` is one slot of its server's: the
    window a request must fit there, whatever the model's own."""
    caps = _remembered(model)
    if caps is None or window is None or caps.slot_window != window:
        return label
    if caps.slots and caps.slots > 1:
        return f"{label} (one of its server's {caps.slots} slots, {window:,} tokens each)"
    return f"{label} (the window of its server's slot)"


def _remembered(model: Any) -> Any:
    try:
        url = server_url(model)
    except AttributeError:  # not an iModel (a stand-in in user code)
        return None
    return remembered(url) if url else None


def window_error(
    plan: ContextPlan | None,
    label: str,
    *,
    fitted: bool,
    cause: BaseException | None = None,
) -> ContextWindowError:
    """The error for a request that does not fit, saying what to do. ``fitted``: the request
    was already cut with ``fit_context=True``; ``cause``: the provider's own report."""
    said = f" The provider said: {cause}" if cause is not None else ""
    tokens = plan.tokens if plan is not None else None
    if plan is None or plan.window is None:
        return ContextWindowError(
            f"the request does not fit the context window of {label}, whose size lion_nb "
            f"does not know, so nothing could be left out.{said} Give the window "
            f"(iModel(..., context_window=N)) and pass {FIX} to send only the most recent "
            "turns that fit; or start afresh (branch.clear_messages(), view.clear()).",
            window=None,
            tokens=tokens,
        )
    how = "counted" if plan.exact else "estimated"
    if fitted and not plan.fits:
        return ContextWindowError(
            f"the instruction alone does not fit the {plan.window:,}-token context window of "
            f"{label} with {plan.reserve:,} tokens kept for the reply ({how} "
            f"{plan.tokens:,} tokens).{said} Shorten it, or lower max_tokens.",
            window=plan.window,
            tokens=plan.tokens,
        )
    if fitted:
        return ContextWindowError(
            f"the request ({how} {plan.tokens:,} tokens, cut with {FIX}) still did not fit "
            f"the {plan.window:,}-token context window of {label}.{said} Lower max_tokens, "
            "or give a smaller iModel(..., context_window=N) so more room is kept.",
            window=plan.window,
            tokens=plan.tokens,
        )
    kept = "nothing was sent or recorded" if cause is None else "nothing was recorded"
    return ContextWindowError(
        f"the request ({how} {plan.full_tokens:,} tokens) does not fit the "
        f"{plan.window:,}-token context window of {label}; {kept}."
        f"{said} Pass {FIX} to send the system message and only the most recent turns that "
        "fit (the chat view does), or start afresh (branch.clear_messages(), view.clear()).",
        window=plan.window,
        tokens=plan.full_tokens,
    )


def next_turn(messages: Sequence[RoledMessage] | Any, model: Any) -> NextTurn:
    """What the next turn sends (every message, compiled; a CLI agent gets only the new
    prompt) and its size in tokens against the context window."""
    cli = bool(model is not None and model.is_cli)
    if cli:
        texts: list[str] = []
        count = 0
    else:
        payload = compile_messages(messages)
        texts = payload_texts(payload)
        count = len(payload)
    counter, exact = _counter(model)
    tokens = sum(counter(t) for t in texts if t) if exact else estimate_tokens(texts)
    return NextTurn(
        messages=count,
        tokens=tokens,
        exact=exact,
        window=model.context_window if model is not None else None,
        cli=cli,
        recorded=len(messages),
    )
