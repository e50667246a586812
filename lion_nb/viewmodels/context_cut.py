"""What the next turn sends against the model's context window, and where to cut when it
would not fit: the most recent whole turns that fit, the system message always. The branch
keeps every message; the cut reaches the verb as ``progression=`` (ADR-0021) and the view shows
a notice at ``ContextPlan.cut``.

Tokens are counted exactly with the provider's own tokenizer (``count_tokens``) only when the
provider is already constructed (it is after a live call); otherwise — a replay-only machine, a
model not used yet — they are estimated, so llama.cpp is never loaded just to count. An
estimate is trusted with a margin (``ESTIMATE_MARGIN``). Each compiled message also costs its
chat-template frame (``MESSAGE_OVERHEAD``). Room is kept for the reply: the request's
``max_tokens`` when known, else a quarter of the window.
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
from lion_nb.operations.tokens import estimate_tokens
from lion_nb.viewmodels.next_turn import context_window, is_cli_model, payload_texts

__all__ = [
    "ESTIMATE_MARGIN",
    "MESSAGE_OVERHEAD",
    "ContextPlan",
    "ContextWindowError",
    "is_overflow",
    "overflow_error",
    "plan_context",
]

MESSAGE_OVERHEAD = 5  # <|im_start|>role\n ... <|im_end|>\n, and the like
REPLY_PRIMER = 3  # the assistant header the template adds after the last message
ESTIMATE_MARGIN = 1.15  # an estimated count is trusted only this far
_OVERFLOW = re.compile(
    r"context (?:window|length)|maximum context|context_length_exceeded|too many tokens"
    r"|prompt is too long|exceeds? (?:the )?(?:model'?s? )?(?:context|maximum)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ContextPlan:
    """The next request against the window. ``cut``: index in the branch's messages of the
    first message sent after the system message (None: everything is sent); ``progression``:
    the message ids to send (None: all); ``tokens``: what is sent, the instruction included;
    ``full_tokens``: what sending everything would cost; ``reserve``: room kept for the reply."""

    window: int | None
    tokens: int
    full_tokens: int
    exact: bool
    reserve: int
    recorded: int = 0  # the branch's messages the plan was made over
    cut: int | None = None
    progression: tuple[uuid.UUID, ...] | None = None
    fits: bool = True

    @property
    def omitted(self) -> int:
        """How many of the branch's messages the request leaves out."""
        return 0 if self.progression is None else self.recorded - len(self.progression)

    @property
    def fraction(self) -> float | None:
        """What is sent as a share of the window (the gauge)."""
        return self.tokens / self.window if self.window else None


def _counter(model: Any) -> tuple[Callable[[str], int], bool]:
    provider = model.provider_or_none if model is not None else None
    count = getattr(provider, "count_tokens", None)
    if callable(count):
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


def plan_context(
    messages: Sequence[RoledMessage],
    model: Any,
    *,
    instruction: Instruction | str | None = None,
    max_tokens: int | None = None,
    window: int | None = None,
) -> ContextPlan:
    """The next request over ``messages`` (a branch's) plus ``instruction``, cut to the most
    recent turns that fit ``window`` (default: the model's, when known)."""
    window = window if window is not None else context_window(model)
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
    if window is None or is_cli_model(model):
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


def is_overflow(error: BaseException) -> bool:
    """Whether a provider's error says the request exceeded its context window."""
    return isinstance(error, ExecutionError) and bool(_OVERFLOW.search(str(error)))


def overflow_error(plan: ContextPlan | None, label: str, cause: BaseException | None) -> Exception:
    """The error a view shows when the next request does not fit, saying what to do."""
    what = f" ({cause})" if cause is not None else ""
    if plan is None or plan.window is None:
        return ContextWindowError(
            f"the request did not fit the context window of {label}{what}. Its window is not "
            "known, so every message was sent. Give it: lion_nb.view(branch, "
            "context_window=N) sends only the most recent turns that fit; or start afresh "
            "with view.clear(), or fork an earlier message.",
            window=None,
            tokens=plan.tokens if plan is not None else None,
        )
    how = "counted" if plan.exact else "estimated"
    if not plan.fits:
        return ContextWindowError(
            f"the instruction alone does not fit the {plan.window:,}-token window of {label} "
            f"with {plan.reserve:,} tokens kept for the reply ({how} {plan.tokens:,} tokens)"
            f"{what}. Shorten it, or lower max_tokens.",
            window=plan.window,
            tokens=plan.tokens,
        )
    return ContextWindowError(
        f"the request did not fit the {plan.window:,}-token window of {label} ({how} "
        f"{plan.tokens:,} tokens){what}. Lower max_tokens, or start afresh with view.clear().",
        window=plan.window,
        tokens=plan.tokens,
    )
