"""The token view of a chat view's replies: each reply's tokens tinted by
probability, its alternatives on hover or focus, a fork from any token — drawn by the page
(``widgets/tokens.js``) from ``tokens`` ops (``widgets.protocol.TokensOp``).

What the page is sent, and when:

- the ids (page keys) of the replies that have tokens, as the chrome trait ``token_marks``:
  the page puts a "Tokens" control on each; and of those whose token view is open, as the
  chrome trait ``token_open`` (synced state: a page that attaches later — Voilà draws the views
  after the notebook ran, ``show_tokens()`` included — asks for their tokens);
- for a reply whose token view is open (the page asked, ``tokens`` action; or the view follows
  every reply, ``BranchView(tokens=True)``; or the reply is the continuation of a token fork),
  its tokens as *deltas*: the texts and surprise (-log p) of the tokens the page does not have
  yet, with the next throttled update while the reply streams (never the whole list per tick);
- the alternatives of a chunk of tokens (``TOP_CHUNK``) only when the page asks for them (the
  reader hovered or focused a token there): they are most of a token's bytes, and a streamed
  reply's traffic stays within twice the plain chat view's (``benchmarks/bench_tokens_view.py``).

Choosing an alternative forks the conversation there (``fork_token`` ->
``Conversation.afork_at_token``): the view shows the fork like a regenerated reply, so the
``‹ n/of ›`` switcher and Compare work on token forks, and the fork's reply opens its token
view as it streams. ``TokenControls`` is a panel ``BranchView`` holds (it knows the view as a
``widgets.chat_host.ChatHost``); ``TokenPanels`` knows it only as a ``TokenHost`` (below), so
``chat_view`` builds on this module, never the other way round.

Sample ×n samples at a temperature and top-p the page shows and lets the reader set: the
chrome trait ``sample_at`` (``sample_defaults``: the turn's own, or 0.8 where the model samples
at temperature 0 or does not say — at 0 every sample would be the same reply).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from lion_nb.render.tokens_html import samples_html, tokens_html
from lion_nb.signals import StreamDelta
from lion_nb.widgets.chat_host import Action, ChatHost, in_background, index_of
from lion_nb.widgets.protocol import TOP_CHUNK, TokensOp, tokens_op
from lion_nb.widgets.sampling_panel import stored_entropy
from lion_nb.widgets.shown_branch import WARM

if TYPE_CHECKING:
    from lion_nb.samples import Samples
    from lion_nb.session.branch import Branch
    from lion_nb.widgets.channel import Channel
    from lion_nb.widgets.transcript import Transcript

__all__ = [
    "SAMPLE_TOP_P",
    "TokenControls",
    "TokenHost",
    "TokenPanels",
    "has_tokens",
    "sample_defaults",
    "surprise",
]


class TokenHost(Protocol):
    """What the token panels use of their view (``BranchView`` is the one): the branch shown,
    its transcript and channel, its chrome and its saved-notebook copy."""

    @property
    def branch(self) -> Branch: ...

    @property
    def transcript(self) -> Transcript: ...

    @property
    def channel(self) -> Channel: ...

    def set_chrome(self, **values: Any) -> None: ...

    def refresh_static(self) -> bool: ...


MAX_SURPRISE = 9999  # hundredths of a nat: p below ~e^-100 (and p = 0) are drawn alike


def surprise(logprob: float | None) -> int:
    """-log p in hundredths of a nat, as the page is sent it (an int, capped)."""
    if logprob is None or math.isnan(logprob):
        return MAX_SURPRISE
    return min(MAX_SURPRISE, max(0, round(-logprob * 100)))


def has_tokens(message: Any) -> bool:
    """A reply recorded with its tokens (``AssistantResponse.tokens``)."""
    return bool(getattr(message, "tokens", None))


def _text(token: Any) -> str:
    return str(getattr(token, "text", ""))


def _top(token: Any) -> list[list[str | float]]:
    """A token's alternatives as the page is sent them: ``[text, p]``, p to 4 decimals."""
    out: list[list[str | float]] = []
    for alt in getattr(token, "top", None) or ():
        text, logprob = alt[0], alt[1]
        out.append([str(text), round(math.exp(logprob), 4) if logprob > -50 else 0.0])
    return out


SAMPLE_TOP_P = 0.95
"""The top-p Sample ×n offers when the turn sets none (llama.cpp's default)."""


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def sample_defaults(verb_kwargs: dict[str, Any], branch: Branch) -> dict[str, float]:
    """What Sample ×n samples at unless the reader sets otherwise: ``{"temperature",
    "top_p"}`` — the turn's own (the verb's options, else the model's), the temperature 0.8
    (``shown_branch.WARM``) where it is 0 or unset (at 0 the five samples would be one reply
    five times), the top-p 0.95 where it is unset."""
    model = verb_kwargs.get("chat_model") or branch.chat_model_or_none
    own = {} if model is None else dict(getattr(model, "request_defaults", {}) or {})
    own.update(verb_kwargs)
    temperature = _number(own.get("temperature"))
    top_p = _number(own.get("top_p"))
    return {
        "temperature": temperature if temperature else WARM,
        "top_p": top_p if top_p is not None and 0 < top_p <= 1 else SAMPLE_TOP_P,
    }


def sample_setting(content: dict[str, Any], name: str, default: float) -> float | None:
    """The page's ``temperature`` (0 < t <= 2) or ``top_p`` (0 < p <= 1) for a sample set:
    ``default`` when it sent none, None when it sent one out of range (nothing is sampled)."""
    if name not in content:
        return default
    value = _number(content[name])
    top = 2.0 if name == "temperature" else 1.0
    return value if value is not None and 0 < value <= top else None


class TokenPanels:
    """Which replies' token views are open, and the ``tokens`` ops that bring them up to date
    on ``view``'s channel (by message id; the page's key is the transcript's)."""

    def __init__(self, view: TokenHost, *, follow: bool = False) -> None:
        self._view = view
        self.follow = follow  # every reply streamed from now on opens its token view
        self.open_next = False  # the next reply streamed opens its token view (a token fork)
        self.open: set[uuid.UUID] = set()
        self._sent: dict[uuid.UUID, int] = {}
        # the tokens of the replies streaming, as their ``"tokens"`` deltas brought them
        self._streams: dict[uuid.UUID, list[Any]] = {}

    # ----- reading -----------------------------------------------------------------------
    def tokens_of(self, mid: uuid.UUID) -> Sequence[Any] | None:
        """A reply's tokens: recorded with it, else streamed so far."""
        messages = self._view.branch.messages
        if mid in messages:
            tokens = getattr(messages[mid], "tokens", None)
            if tokens is not None:
                return tokens
        return self._streams.get(mid)

    def key_of(self, mid: uuid.UUID) -> str:
        live = self._view.transcript.live.get(mid)  # until recorded: its live name ("L1")
        return live.key if live is not None else str(mid)

    def resolve(self, key: str) -> uuid.UUID | None:
        """The message id of the page's part ``key`` (a recorded id or a live name)."""
        try:
            return uuid.UUID(key)
        except ValueError:
            pass
        for mid, live in self._view.transcript.live.items():
            if live.key == key:
                return mid
        return None

    def open_keys(self) -> list[str]:
        """The page keys of the replies whose token view is open (the chrome trait
        ``token_open``)."""
        return sorted(self.key_of(mid) for mid in self.open)

    def _tell_open(self) -> None:
        self._view.set_chrome(token_open=self.open_keys())

    def marks(self) -> list[str]:
        """The page keys of the replies shown that have tokens (they get a "Tokens" control)."""
        out = [
            str(m.id)
            for m in self._view.branch.messages
            if has_tokens(m) and self._view.transcript.model.shows(m.id)
        ]
        out += [self.key_of(mid) for mid in self._streams if mid not in self._view.branch.messages]
        return out

    # ----- the stream ----------------------------------------------------------------------
    def on_delta(self, signal: StreamDelta) -> None:
        """A ``"tokens"`` delta: the tokens that arrived (``token_index``: the first one's)."""
        if signal.kind != "tokens" or signal.tokens is None:
            return
        mid = signal.message_id
        first = mid not in self._streams
        tokens = self._streams.setdefault(mid, [])
        if signal.token_index > len(tokens):
            return  # the view came in mid-reply: its tokens show once it is recorded
        del tokens[signal.token_index :]
        tokens.extend(signal.tokens)
        if first:
            if self.follow or self.open_next:
                self.open_next = False
                self.open.add(mid)
                self._sent[mid] = 0
            self._view.set_chrome(token_marks=self.marks(), token_open=self.open_keys())
        if mid in self.open:
            self._stream(mid)

    def on_message(self, message: Any) -> None:
        """A reply was recorded: its recorded tokens are the authority from now on."""
        mid = message.id
        streamed = self._streams.pop(mid, None) is not None
        if mid in self.open:
            self._stream(mid)
        if streamed or has_tokens(message):
            self._view.set_chrome(token_marks=self.marks(), token_open=self.open_keys())

    def prune(self) -> None:
        """At rest: a reply streamed but not recorded keeps its tokens while its card is shown
        (a stopped reply "not recorded"), no longer."""
        live = self._view.transcript.live
        for gone in [mid for mid in self._streams if mid not in live]:
            del self._streams[gone]

    def _stream(self, mid: uuid.UUID) -> None:
        self._view.channel.stream(f"tokens:{mid}", lambda: self._delta(mid))

    def _delta(self, mid: uuid.UUID) -> list[TokensOp]:
        tokens = self.tokens_of(mid)
        if tokens is None or mid not in self.open:
            return []
        at = self._sent.get(mid, 0)
        if at > len(tokens):  # fewer than sent (never expected): the view afresh
            at = 0
        new = tokens[at:]
        if not new and at:
            return []
        self._sent[mid] = len(tokens)
        texts = [_text(tok) for tok in new]
        surprises = [surprise(getattr(tok, "logprob", None)) for tok in new]
        entropies = [stored_entropy(tok) for tok in new]  # the strip's second line
        return [tokens_op(self.key_of(mid), at, t=texts, s=surprises, e=entropies)]

    # ----- the page's asks --------------------------------------------------------------------
    def set_open(self, key: str, open_: bool) -> None:
        mid = self.resolve(key)
        if mid is None:
            return
        self._view.refresh_static()  # the saved notebook shows the open token views
        if not open_:
            self.open.discard(mid)
            self._tell_open()
            return
        self.open.add(mid)
        self._tell_open()
        self._sent[mid] = 0  # the page starts afresh: all of them
        self._view.channel.push(*self._delta(mid))

    def top(self, key: str, at: int) -> None:
        mid = self.resolve(key)
        tokens = self.tokens_of(mid) if mid is not None else None
        if mid is None or tokens is None or not 0 <= at < len(tokens):
            return
        start = at - at % TOP_CHUNK
        chunk = tokens[start : start + TOP_CHUNK]
        self._view.channel.push(tokens_op(key, start, top=[_top(tok) for tok in chunk]))

    def static_html(self) -> str:
        """The open token views as the saved notebook shows them: each reply's tinted tokens
        (``render.tokens_html``), after the transcript."""
        out = []
        replies = [m for m in self._view.branch.messages if m.role == "assistant"]
        for n, message in enumerate(replies, 1):
            if message.id in self.open and has_tokens(message):
                tokens = message.tokens
                out.append(tokens_html(tokens, title=f"Tokens of reply {n}"))
        return "".join(out)


class TokenControls:
    """The token views of a chat view: a panel ``BranchView`` holds (it knows the view only as
    a ``ChatHost``): ``show_tokens``, ``afork_at_token``, the sample set shown under the view,
    and the page actions ``tokens``, ``token_top``, ``fork_token``, ``sample`` (at the page's
    temperature and top-p, else ``sample_defaults``, which the chrome trait ``sample_at``
    shows)."""

    def __init__(self, host: ChatHost, *, follow: bool = False) -> None:
        self._host = host
        self.panels = TokenPanels(host, follow=follow)
        self._samples_shown = False

    def actions(self) -> dict[str, Action]:
        """This panel's page actions (the view's ``ActionTable``)."""
        return {
            "tokens": self._action_tokens,
            "token_top": self._action_token_top,
            "fork_token": self._action_fork_token,
            "sample": self._action_sample,
        }

    def show_tokens(self, index: int | None = None, *, open: bool = True) -> None:
        """Open (or close) the token view of the reply at ``index`` of the shown branch (the
        last reply when None) in the pages showing this view."""
        messages = list(self._host.branch.messages)
        if index is None:
            index = next(
                (i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "assistant"),
                None,
            )
            if index is None:
                raise ValueError("there is no reply to show the tokens of")
        message = messages[index]
        if getattr(message, "tokens", None) is None:
            raise ValueError(f"message {index} has no tokens (ask the model with logprobs=K)")
        self.panels.set_open(str(message.id), open)

    async def afork_at_token(self, index: int, token: int, text: str) -> Branch:
        """A fork whose reply at ``index`` keeps its first ``token`` tokens, then ``text``, and
        lets the model continue (``Conversation.afork_at_token``); the view shows it, its reply
        streaming with its token view open. Returns the fork."""
        conversation = self._host.conversation
        self.panels.open_next = True
        try:
            fork: Branch = await self._host.controlled(
                lambda: conversation.afork_at_token(index, token, text)
            )
            return fork
        finally:
            self.panels.open_next = False

    def sync_marks(self) -> None:
        """Which replies have tokens, and which token views are open."""
        if not self._host.running:
            self.panels.prune()
        self._host.set_chrome(token_marks=self.panels.marks(), token_open=self.panels.open_keys())
        self._host.set_chrome(sample_at=sample_defaults(self._host.verb_kwargs, self._host.branch))

    def _action_tokens(self, content: dict[str, Any]) -> None:
        self.panels.set_open(str(content.get("key", "")), bool(content.get("open", True)))

    def _action_token_top(self, content: dict[str, Any]) -> None:
        at = content.get("at")
        if isinstance(at, int):
            self.panels.top(str(content.get("key", "")), at)

    def _action_fork_token(self, content: dict[str, Any]) -> None:
        index = index_of(self._host.branch, content)
        token, text = content.get("index"), content.get("text")
        if index is None or not isinstance(token, int) or not isinstance(text, str):
            return
        in_background(self._host.show_error, lambda: self.afork_at_token(index, token, text))

    def _action_sample(self, content: dict[str, Any]) -> None:
        index = index_of(self._host.branch, content)
        n = content.get("n", 5)
        if index is None or not isinstance(n, int) or not 1 <= n <= 20:
            return
        at = sample_defaults(self._host.verb_kwargs, self._host.branch)
        t = sample_setting(content, "temperature", at["temperature"])
        p = sample_setting(content, "top_p", at["top_p"])
        if t is None or p is None:
            return
        conversation = self._host.conversation

        async def sample() -> None:
            samples = await self._host.controlled(
                lambda: conversation.asample(n, index=index, temperature=t, top_p=p)
            )
            self.show_samples(samples)

        in_background(self._host.show_error, sample)

    def show_samples(self, samples: Samples) -> None:
        """Show a sample set (``view.asample``'s ``Samples``) under the view, where the
        comparison goes: each reply, the prefix they all share marked, tokens tinted
        (``render.tokens_html.samples_html``); Close (or a Compare) replaces it."""
        self._host.close_compare()
        self._samples_shown = True
        self._host.set_chrome(compare_html=samples_html(samples))

    def close_samples(self) -> None:
        """Close the sample set under the view, if one is shown."""
        if self._samples_shown:
            self._samples_shown = False
            self._host.set_chrome(compare_html="")
