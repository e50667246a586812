"""What the chat view says about the alternative it shows (``view.branch``): its title and
status line, counted as the ``‹ n/of ›`` switcher counts (``Conversation.shown_position``: the
branch's latest fork), with the view's name kept and ids only in the tooltip; how a reply was
sampled; and why a regenerate gave the same reply (a model at temperature 0)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lion_nb.render.chrome import shown_branch_html
from lion_nb.samples import sampling_label

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch
    from lion_nb.session.conversation import Conversation

__all__ = ["WARM", "greedy", "same_reply_note", "shown_words"]

WARM = 0.8
"""The sampling temperature a view offers to regenerate at while its model is at 0."""


def greedy(verb_kwargs: dict[str, Any], branch: Branch) -> bool:
    """Turns are sampled at temperature 0 (the verb's options, else the model's): the most
    likely words every time, so a regenerate gives the same reply."""
    model = verb_kwargs.get("chat_model") or branch.chat_model_or_none
    defaults = {} if model is None else model.request_defaults
    t = verb_kwargs.get("temperature", defaults.get("temperature"))
    return isinstance(t, int | float) and not isinstance(t, bool) and t == 0


def shown_words(
    conv: Conversation, base: str, last: tuple[str, str] | None, note: str = ""
) -> tuple[str, str | None]:
    """``(title, status line HTML)`` for the branch ``conv`` shows; the status line is None
    when there is nothing to switch between (the first branch alone, a cleared one): the
    title is then the view's name ``base`` alone. ``last``: the last run's (state, words),
    put first; ``note`` after."""
    where = conv.shown_position()
    if where is None:
        return base, None
    _k, n, of = where
    branch = conv.branch
    label = " · ".join(filter(None, [f"Alternative {n} of {of}", sampling(branch)]))
    state, said = last or ("idle", "")
    first = branch is conv.origin
    line = shown_branch_html(
        state,
        f"{said} · " if said else "",
        n,
        of,
        first=first,
        note=note,
        ids=_ids(branch, first=first),
    )
    return (f"{base} · {label}" if base else label), line


def same_reply_note(conv: Conversation, at_zero: bool) -> str:
    """A note when the shown branch's newest reply says word for word what another
    alternative says there (and why, when the model is at temperature 0); else ""."""
    where = conv.shown_position()
    if where is None:
        return ""
    k = where[0]
    text = conv.branch.messages[k].text
    for j, other in enumerate(conv.alternatives(k), start=1):
        if other is not conv.branch and other.messages[k].text == text:
            if at_zero:
                return (
                    f"the same reply as alternative {j}: at temperature 0 the model gives "
                    f"its most likely words every time; Regenerate at temperature {WARM:g} "
                    "samples another"
                )
            return f"the same words as alternative {j}"
    return ""


def sampling(branch: Branch) -> str:
    """How the branch's reply was sampled, when asked for ("sample 2/5 · temperature 0.8",
    "temperature 0.8")."""
    sample = branch.metadata.get("sample")
    if isinstance(sample, dict) and "n" in sample:
        label = sampling_label(sample.get("temperature"), sample.get("top_p"))
        return f"sample {sample['n']}/{sample.get('of', '?')} · {label}"
    regenerated = branch.metadata.get("regenerated")
    if isinstance(regenerated, dict) and regenerated.get("temperature") is not None:
        return f"temperature {regenerated['temperature']:g}"
    return ""


def _ids(branch: Branch, *, first: bool) -> str:
    """The branch's id and the one it was forked from: for the tooltip."""
    short = str(branch.id)[:8]
    if first:
        return f"view.branch: branch {short} (the first)"
    origin = str((branch.metadata.get("forked_from") or {}).get("branch_id") or "")
    return f"view.branch: branch {short}" + (f", forked from {origin[:8]}" if origin else "")
