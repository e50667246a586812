"""The kernel's side of the sampling panel: the panel on any token of a reply, opened from
the token's pop-up ("How sampling chose this"), with sliders for temperature, top-k, top-p and
min-p and the bars of the token's stored alternatives redrawn by the page at every move —
``widgets/sampling.js``, a port of ``lion_nb.sampling.sample_distribution``, so no slider move
reaches the kernel or the model.

The kernel sends two things only:

- the settings the panel starts at, once per reply, when the page asks (the ``sampler`` action,
  sent as a token's pop-up first offers the panel): a ``sampler`` op
  (``protocol.sampler_op``) with the settings the reply was asked with — the turn's own (a
  sample or a regenerate at a temperature), else the view's options, else the model's
  (``iModel`` options; the embedded model's own temperature), and llama.cpp's defaults for
  what none of them says (``LLAMA_CPP_DEFAULTS``), naming which are the model's (``given``);
- beside each token's surprise, the entropy of its stored alternatives (``stored_entropy``,
  hundredths of a nat), which the token view's ``tokens`` ops carry (``e``) for the surprise
  strip's second line.

The static form of a saved notebook shows the token view (``render.tokens_html``), not this
panel: a slider needs the page's script.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lion_nb.widgets.chat_host import Action, ChatHost
from lion_nb.widgets.protocol import SamplerOp, sampler_op

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["LLAMA_CPP_DEFAULTS", "SamplingPanel", "reply_settings", "stored_entropy"]

LLAMA_CPP_DEFAULTS: dict[str, float] = {
    "temperature": 0.8,
    "top_k": 40,
    "top_p": 0.95,
    "min_p": 0.05,
}
"""llama.cpp's sampling defaults (``common/common.h``): where the panel starts for a setting
neither the turn nor the model says."""

SETTINGS = tuple(LLAMA_CPP_DEFAULTS)


def stored_entropy(token: Any) -> int:
    """The entropy of a token's stored alternatives (its ``.top``, renormalised: what lies
    beyond them was not stored), in hundredths of a nat as the page is sent it; -1 when none
    were stored."""
    # -inf (p = 0) and NaN are left out; H = ln Z - sum(p * (lp - m)), p = e^(lp - m) / Z:
    # one exp per alternative and one log, in one loop (a 4,000-token reply opens with all)
    logprobs = [float(alt[1]) for alt in getattr(token, "top", None) or ()]
    m = max((lp for lp in logprobs if lp == lp), default=-math.inf)  # lp == lp: not NaN
    if m == -math.inf:
        return -1
    total = spread = 0.0
    for lp in logprobs:
        if lp > -math.inf:
            w = math.exp(lp - m)
            total += w
            spread += w * (lp - m)
    h = math.log(total) - spread / total
    return max(0, round(h * 100))


def _valid(name: str, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return False
    if name == "top_k":
        return isinstance(value, int) and value >= 0
    if name == "temperature":
        return 0 <= value < math.inf
    return 0 <= value <= 1


def _model_own(model: Any) -> dict[str, Any]:
    """The sampling settings the model is given (``iModel`` options), and the embedded
    model's own temperature where it is not (``LocalProvider``'s default)."""
    own: dict[str, Any] = {}
    if model is None:
        return own
    if getattr(getattr(model, "spec", None), "kind", None) == "local":
        provider_defaults = getattr(model.provider, "defaults", None) or {}
        if "temperature" in provider_defaults:
            own["temperature"] = provider_defaults["temperature"]
    own.update(getattr(model, "request_defaults", None) or {})
    return own


def _turn_own(branch: Branch, mid: uuid.UUID) -> dict[str, Any]:
    """The settings the turn itself was sampled with: a sample (``Sample ×5``) or a
    regenerate at a temperature records them in its fork's metadata, for the fork's first
    reply (the one after the messages it kept)."""
    meta = branch.metadata
    sampled = meta.get("sample") if isinstance(meta.get("sample"), dict) else None
    sampled = sampled or (
        meta.get("regenerated") if isinstance(meta.get("regenerated"), dict) else None
    )
    forked = meta.get("forked_from")
    if not sampled or not isinstance(forked, dict) or not isinstance(forked.get("index"), int):
        return {}
    messages = list(branch.messages)
    first = next(
        (m for m in messages[forked["index"] + 1 :] if m.role == "assistant"),
        None,
    )
    if first is None or first.id != mid:
        return {}
    return dict((n, sampled[n]) for n in SETTINGS if sampled.get(n) is not None)


def reply_settings(
    branch: Branch, verb_kwargs: dict[str, Any], mid: uuid.UUID
) -> tuple[dict[str, Any], list[str]]:
    """``(settings, given)``: the four settings reply ``mid`` of ``branch`` was asked with
    (the turn's own, the view's options, the model's; llama.cpp's defaults for the rest), and
    the names of those that were not llama.cpp's defaults."""
    model = verb_kwargs.get("chat_model") or branch.chat_model_or_none
    own = {**_model_own(model), **verb_kwargs, **_turn_own(branch, mid)}
    given = [name for name in SETTINGS if _valid(name, own.get(name))]
    settings: dict[str, Any] = dict(LLAMA_CPP_DEFAULTS)
    settings.update((n, own[n]) for n in given)
    return settings, given


class SamplingPanel:
    """The sampling panels of a chat view's token views: a panel ``BranchView`` holds (it
    knows the view as a ``ChatHost``), answering the page's ``sampler`` action. ``resolve``
    reads a page key as a message id (``TokenPanels.resolve``)."""

    def __init__(self, host: ChatHost, resolve: Callable[[str], uuid.UUID | None]) -> None:
        self._host = host
        self._resolve = resolve

    def actions(self) -> dict[str, Action]:
        """This panel's page actions (the view's ``ActionTable``)."""
        return {"sampler": self._action_sampler}

    def settings_op(self, key: str) -> SamplerOp | None:
        """The ``sampler`` op of the reply at page key ``key`` (None: no such reply)."""
        mid = self._resolve(key)
        if mid is None:
            return None
        settings, given = reply_settings(self._host.branch, self._host.verb_kwargs, mid)
        return sampler_op(
            key,
            temperature=float(settings["temperature"]),
            top_k=int(settings["top_k"]),
            top_p=float(settings["top_p"]),
            min_p=float(settings["min_p"]),
            given=given,
        )

    def _action_sampler(self, content: dict[str, Any]) -> None:
        op = self.settings_op(str(content.get("key", "")))
        if op is not None:
            self._host.channel.push(op)
