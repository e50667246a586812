"""How a progression becomes the messages a provider receives.

The rules (tested in tests/test_compile.py):

* ``System`` -> ``{"role": "system"}`` as the first message (a real system role; never folded
  into the first user turn).
* ``Instruction`` -> ``{"role": "user"}`` whose content is ``Instruction.text``; with images the
  content becomes parts (text + ``image_url``).
* ``AssistantResponse`` -> ``{"role": "assistant", "content": text}``; with
  ``thinking_blocks=True`` (a provider whose registry entry says its API wants them back, as
  Anthropic's does in a tool loop) also ``"thinking_blocks"``: the signed blocks recorded in
  ``metadata["thinking_blocks"]``, sent back exactly as received.
* ``ActionRequest`` -> a ``tool_calls`` entry on an assistant message: appended to the directly
  preceding assistant message when there is one (the model asked for it in that turn),
  otherwise on a new assistant message with empty content. Missing call ids get a stable id
  derived from the message id.
* ``ActionResponse`` -> ``{"role": "tool", "tool_call_id", "content"}`` when its request was
  compiled as a tool call; an orphan response (its request is not in the progression) becomes a
  user message stating the tool result, so nothing is silently dropped.

CLI agents take one prompt per turn (they keep their own history), so ``cli_prompt`` renders the
new instruction only; a system message travels as the CLI's system-prompt option.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from lion_nb.messages import (
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Instruction,
    RoledMessage,
    System,
)


def call_id_of(message: ActionRequest | ActionResponse) -> str:
    """The tool-call id a request sends for this call: the provider's ``call_id`` when it
    gave one, else one made from the request's message id (a response linked through
    ``action_request_id`` gets its request's), so a call and its result always match."""
    if message.call_id:
        return message.call_id
    if isinstance(message, ActionResponse) and message.action_request_id is not None:
        return "call_" + message.action_request_id.hex[:24]
    return "call_" + message.id.hex[:24]


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


def instruction_content(ins: Instruction) -> str | list[dict[str, Any]]:
    """An instruction as a chat message's ``content``: its text, or, with images, a list of
    a text part and an ``image_url`` part per image (a bare base64 string is sent as PNG
    data; ``image_detail`` goes with each)."""
    text = ins.text
    if not ins.images:
        return text
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for image in ins.images:
        url = (
            image
            if image.startswith(("http://", "https://", "data:"))
            else ("data:image/png;base64," + image)
        )
        part: dict[str, Any] = {"type": "image_url", "image_url": {"url": url}}
        if ins.image_detail:
            part["image_url"]["detail"] = ins.image_detail
        parts.append(part)
    return parts


def compile_messages(
    messages: Iterable[RoledMessage], *, thinking_blocks: bool = False
) -> list[dict[str, Any]]:
    """Compile messages (in order) to chat-completions dicts. See the module docstring."""
    out: list[dict[str, Any]] = []
    compiled_calls: set[str] = set()
    for msg in messages:
        if isinstance(msg, System):
            out.append({"role": "system", "content": msg.system})
        elif isinstance(msg, Instruction):
            out.append({"role": "user", "content": instruction_content(msg)})
        elif isinstance(msg, AssistantResponse):
            assistant: dict[str, Any] = {"role": "assistant", "content": msg.response}
            blocks = msg.metadata.get("thinking_blocks") if thinking_blocks else None
            if isinstance(blocks, list) and blocks:
                assistant["thinking_blocks"] = blocks
            out.append(assistant)
        elif isinstance(msg, ActionRequest):
            cid = call_id_of(msg)
            call = {
                "id": cid,
                "type": "function",
                "function": {
                    "name": msg.function,
                    "arguments": json.dumps(msg.arguments, ensure_ascii=False),
                },
            }
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
            compiled_calls.add(cid)
        elif isinstance(msg, ActionResponse):
            cid = call_id_of(msg)
            if cid in compiled_calls:
                out.append(
                    {"role": "tool", "tool_call_id": cid, "content": _output_text(msg.output)}
                )
            else:
                status = "failed" if msg.is_error else "returned"
                out.append(
                    {
                        "role": "user",
                        "content": (
                            f"Tool {msg.function}({json.dumps(msg.arguments, default=str)}) {status}: "
                            f"{_output_text(msg.output)}"
                        ),
                    }
                )
        else:  # a new message type must get a rule here, never be dropped
            raise TypeError(f"no compile rule for {type(msg).__name__}")
    return out


def cli_prompt(instruction: Instruction) -> str:
    """The prompt a CLI agent receives for one turn."""
    return instruction.text
