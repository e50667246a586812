"""ReAct rounds as HTML: one card per round (head with status, time, usage; the instruction;
the analysis as Markdown; parallel tool calls side by side with their results; the reply still
streaming), run headings, and the whole view for the static fallback. The view model is
``viewmodels.rounds``; all model and tool text goes through ``render.escape`` or the render layer.
"""

from __future__ import annotations

import json
from typing import Any

from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.render.escape import escape
from lion_nb.render.html import (
    CardParts,
    Status,
    assistant_parts,
    head_html,
    message_html,
    streaming_html,
)
from lion_nb.render.markdown import render_markdown
from lion_nb.render.text import format_usage
from lion_nb.viewmodels.rounds import (
    ActionPair,
    FormingCall,
    Round,
    RoundsModel,
    RunGroup,
    Step,
    shown,
)

__all__ = [
    "actions_html",
    "analysis_parts",
    "analysis_text",
    "call_preview_html",
    "call_preview_text",
    "instruction_html",
    "live_reply_status",
    "reply_fields",
    "round_attrs",
    "round_classes",
    "round_error_html",
    "round_frame_html",
    "round_head_html",
    "round_html",
    "round_title",
    "rounds_header_html",
    "rounds_html",
    "run_head_html",
    "status_word",
]


def _duration(ms: float | None) -> str:
    if ms is None:
        return ""
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def reply_fields(message: AssistantResponse) -> dict[str, Any] | None:
    """A ReAct reply's structured fields (its parsed result, or its JSON text), if it has
    an ``analysis`` or ``answer``."""
    data: Any = message.metadata.get("result")
    if data is None:
        try:
            data = json.loads(message.response)
        except (ValueError, TypeError):
            data = None
    if hasattr(data, "model_dump"):
        data = data.model_dump(mode="json")
    if not isinstance(data, dict) or not any(k in data for k in ("analysis", "answer")):
        return None
    return data


def analysis_text(message: AssistantResponse) -> str:
    """What a person reads of a round's reply: its analysis or answer, else the text."""
    data = reply_fields(message)
    if data is None:
        return message.response
    text = data.get("analysis") or data.get("answer") or ""
    return text if isinstance(text, str) else json.dumps(text, default=str)


def analysis_parts(message: AssistantResponse) -> CardParts:
    """The analysis card as its named pieces (a streamed reply is sealed with them): a ReAct
    reply is JSON; its ``analysis`` (or ``answer``) text is what a person wants to read, with
    the rest of the fields under it."""
    data = reply_fields(message)
    if data is None:
        return assistant_parts(message)
    text = data.get("analysis") or data.get("answer") or ""
    rest = {
        k: v
        for k, v in data.items()
        if k not in ("analysis", "answer") and v not in (None, [], {}, "")
    }
    meta = message.metadata
    head = head_html(
        "assistant",
        created_at=message.created_at,
        model=str(meta["model"]) if meta.get("model") else None,
        usage=meta.get("usage"),
    )
    extra = ""
    if rest:
        extra = (
            '<details class="lion-result"><summary>Fields</summary>'
            f'<pre class="lion-json">{escape(json.dumps(rest, indent=2, default=str))}</pre>'
            "</details>"
        )
    if text and (not isinstance(text, str) or text.strip()):
        body = render_markdown(text if isinstance(text, str) else json.dumps(text, default=str))
    else:  # no analysis or answer in it (``{"answer": null}``): show what the model sent
        body = f'<pre class="lion-json">{escape(message.response)}</pre>'
    return CardParts(
        classes=("lion-msg", "lion-assistant", "lion-analysis"),
        attrs={"data-id": str(message.id), "data-role": "assistant"},
        head=head,
        thinking="",
        body=body,
        after=extra,
    )


def _analysis(message: AssistantResponse) -> str:
    return analysis_parts(message).html()


def _pair_html(pair: ActionPair) -> str:
    parts = [message_html(pair.request)]
    if pair.response is not None:
        parts.append(message_html(pair.response))
    else:
        parts.append(
            '<div class="lion-msg lion-action_response lion-pending">'
            f"{head_html('action_response', function=pair.request.function)}"
            '<div class="lion-body lion-empty">running…</div></div>'
        )
    return f'<div class="lion-action">{"".join(parts)}</div>'


def round_title(rnd: Round) -> str:
    return "Answer" if rnd.final else f"Round {rnd.number}"


def round_classes(rnd: Round) -> str:
    """The classes of a round's box (its status and whether it is the answer)."""
    return f"lion-round lion-round-{rnd.status}" + (" lion-round-final" if rnd.final else "")


def round_attrs(rnd: Round) -> dict[str, str]:
    """The data attributes of a round's box."""
    return {"data-round": str(rnd.number), "data-status": rnd.status}


def round_frame_html(rnd: Round, inner: str = "", *, parts: bool = False) -> str:
    """A round's box around ``inner``; ``parts``: marked as the box a live view puts the
    round's pieces in (``data-parts``)."""
    attrs = "".join(f' {k}="{escape(v)}"' for k, v in round_attrs(rnd).items())
    mark = " data-parts" if parts else ""
    return f'<div class="{escape(round_classes(rnd))}"{attrs}{mark}>{inner}</div>'


_STATUS_WORDS = {"no-answer": "no answer"}  # a status that is not one word


def status_word(status: str) -> str:
    """A round's or run's status as a person reads it."""
    return _STATUS_WORDS.get(status, status)


def _status_html(status: str) -> str:
    return f'<span class="lion-status lion-{escape(status)}">{escape(status_word(status))}</span>'


def round_head_html(rnd: Round) -> str:
    """A round's head: title, status, time, usage, actions."""
    head = [
        f'<span class="lion-round-title">{escape(round_title(rnd))}</span>',
        _status_html(rnd.status),
    ]
    if rnd.duration_ms is not None:
        head.append(f'<span class="lion-round-time">{escape(_duration(rnd.duration_ms))}</span>')
    usage = format_usage(rnd.usage)
    if usage:
        head.append(f'<span class="lion-usage">{escape(usage)}</span>')
    if rnd.action_count:
        n = rnd.action_count
        head.append(f'<span class="lion-round-actions">{n} action{"s" if n != 1 else ""}</span>')
    if rnd.extension_needed:
        head.append('<span class="lion-meta">continues</span>')
    return f'<div class="lion-round-head">{"".join(head)}</div>'


def instruction_html(message: Instruction) -> str:
    """A round's instruction, collapsed."""
    return (
        '<details class="lion-round-instruction"><summary>Instruction</summary>'
        f"{message_html(message)}</details>"
    )


def actions_html(step: Step) -> str:
    """A step's tool calls side by side, each with its result ("" without calls)."""
    if not step.actions:
        return ""
    return '<div class="lion-parallel">' + "".join(_pair_html(p) for p in step.actions) + "</div>"


_ARG_CHARS = 40  # an argument's value in a forming call, at most (a preview, not the record)


def _arg(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _ARG_CHARS else text[: _ARG_CHARS - 1] + "…"


def call_preview_text(call: FormingCall) -> str:
    """A tool call as the model writes it: ``→ add(a=2, …)``, then ``→ add(a=2, b=3)``."""
    if call.name is None:
        return "→ …"
    args = [f"{k}={_arg(v)}" for k, v in call.arguments]
    if not call.done:
        args.append("…")
    return f"→ {call.name}({', '.join(args)})"


def call_preview_html(calls: list[FormingCall]) -> str:
    """The tool calls a streaming reply is writing, one line each, until the recorded calls
    replace them. Named for assistive technology as a whole (it is not a live region: a screen
    reader is not told every argument as it arrives; the recorded call card is what stays)."""
    label = "Tool call being written" if len(calls) == 1 else "Tool calls being written"
    lines = "".join(
        f'<div class="lion-call-line">{escape(call_preview_text(c))}</div>' for c in calls
    )
    return f'<div class="lion-call-preview" role="group" aria-label="{label}">{lines}</div>'


_ENDED: dict[str, Status] = {"stopped": "stopped", "failed": "failed", "done": "done"}


def live_reply_status(rnd: Round) -> Status:
    """How a reply still streaming in ``rnd`` is marked."""
    return _ENDED.get(rnd.status, "streaming")


def round_error_html(rnd: Round) -> str:
    return f'<div class="lion-field-error">{escape(rnd.error)}</div>' if rnd.error else ""


def round_html(rnd: Round) -> str:
    """One round: head (title, status, time, usage), instruction, analysis, actions."""
    parts = [round_head_html(rnd)]
    parts.extend(instruction_html(ins) for ins in rnd.instructions)
    for step in rnd.steps:
        if step.analysis is not None:
            parts.append(_analysis(step.analysis))
        parts.append(actions_html(step))
    for mid, reply in rnd.live.items():
        thinking = rnd.live_thinking[mid].text() if mid in rnd.live_thinking else ""
        status = live_reply_status(rnd)
        parts.append(streaming_html(mid, reply.display_text(), thinking, status=status))
    parts.append(round_error_html(rnd))
    return round_frame_html(rnd, "".join(parts))


def run_head_html(group: RunGroup) -> str:
    bits = [
        f'<span class="lion-round-title">{escape(group.operation)}</span>',
        _status_html(group.status),
    ]
    if group.duration_ms is not None:
        bits.append(f"<span>{escape(_duration(group.duration_ms))}</span>")
    n = len(group.rounds)
    bits.append(f"<span>{n} round{'s' if n != 1 else ''}</span>")
    usage = format_usage(group.usage)
    if usage:
        bits.append(f'<span class="lion-usage">{escape(usage)}</span>')
    if group.error:
        bits.append(f'<span class="lion-field-error">{escape(group.error)}</span>')
    preamble = "".join(message_html(m) for m in group.preamble)
    if preamble:
        preamble = f'<div class="lion-run-preamble">{preamble}</div>'
    return f'<div class="lion-run-head lion-round-head">{"".join(bits)}</div>{preamble}'


def rounds_html(model: RoundsModel, *, header: str = "") -> str:
    """Everything, as one fragment (the static fallback and export)."""
    parts = [header] if header else []
    for group in model.runs:
        if not shown(group):
            continue
        parts.append(run_head_html(group))
        parts.extend(round_html(r) for r in group.rounds)
    if not any(shown(g) for g in model.runs):
        parts.append('<div class="lion-meta">No ReAct rounds yet.</div>')
    return f'<div class="lion-view lion-rounds">{"".join(parts)}</div>'


def rounds_header_html(title: str, rounds: list[Round]) -> str:
    """The rounds view's heading: its title, how many rounds, running or not, usage."""
    running = any(r.status == "running" for r in rounds)
    usage: dict[str, Any] = {}
    for rnd in rounds:
        for k, v in rnd.usage.items():
            usage[k] = usage.get(k, 0) + v
    bits = [f"{len(rounds)} round{'s' if len(rounds) != 1 else ''}"]
    if running:
        bits.append("running")
    if usage:
        bits.append(format_usage(usage))
    return (
        f'<div class="lion-round-head"><span class="lion-round-title">{escape(title)}'
        f'</span><span class="lion-meta">{escape(" · ".join(bits))}</span></div>'
    )
