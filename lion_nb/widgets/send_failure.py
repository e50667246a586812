"""What the chat view says and does when a Send fails before anything is recorded.

The text goes back into the prompt box (a ``draft`` op with ``restore``: the page puts it back
unless the user has typed something else since), and the error box gives advice a person can
follow from the view. A ``ContextWindowError``'s own message speaks to code ("lower
max_tokens", "pass fit_context=True"); the view's Send already passes ``fit_context=True``, so
what still fails is a message that alone does not fit the window (no history can be left out
to make room) or a conversation the provider refused even when cut: the view says that, and
what to do here (shorten it, or Clear).
"""

from __future__ import annotations

from lion_nb.errors import ContextWindowError

__all__ = ["view_advice"]


def view_advice(error: BaseException, *, given_back: bool) -> tuple[str, str] | None:
    """``(heading, advice)`` for an error a chat view's Send met, in the view's words, or None
    when the error's own message is the advice. ``given_back``: the text is back in the box."""
    if not isinstance(error, ContextWindowError):
        return None
    back = " Your text is back in the box." if given_back else ""
    window, tokens = error.window, error.tokens
    if (window and tokens and tokens >= window) or "alone does not fit" in str(error):
        size = "This message does not fit the model's context window"
        if window and tokens:
            size = (
                f"This message is about {_n(tokens)} tokens; the model's window holds {_n(window)}"
            )
        return (
            "Too long for the model",
            f"{size}, with room kept for the reply, and leaving older turns out cannot make room "
            f"for it. Shorten it and send again.{back}",
        )
    return (
        "The conversation is too long for the model",
        "Even with the older turns left out, the request did not fit the model's context "
        "window. Clear starts afresh (this conversation stays an alternative), or shorten "
        f"the message.{back}",
    )


def _n(count: int) -> str:
    return format(count, ",")
