"""``communicate``: a recorded exchange plus optional parsing (ADR D3). The lifecycle is the
facade's (``observed_run``); this module emits none of its own.

The exchange is one ``chat.request`` with ``records=True``: the instruction and the reply are
recorded together after the reply. The verb options travel on the ``ChatParam``:
``on_stop="record"`` keeps a stopped exchange (the instruction and the partial reply, marked
``metadata["stopped"]``) where the default records nothing; ``fit_context=True`` sends only the
most recent turns that fit the window (``operations.window``)."""

from __future__ import annotations

from typing import Any

from lion_nb.errors import ParseError
from lion_nb.operations.chat import request
from lion_nb.operations.jsonx import extract_json, fuzzy_keys
from lion_nb.operations.parse import parse
from lion_nb.operations.types import ChatParam, ParseParam
from lion_nb.port.branch_port import BranchPort


def map_request_fields(text: str, fields: dict[str, Any], threshold: float = 0.85) -> Any:
    """Fuzzy-match the reply's JSON object to ``fields``; unmatched fields are left out. A
    reply with no JSON object is returned as text (it is recorded either way)."""
    try:
        data = extract_json(text)
    except ValueError:
        return text
    if not isinstance(data, dict):
        return text
    matched = fuzzy_keys(data, list(fields), threshold)
    return {name: matched[name] for name in fields if name in matched}


async def communicate(
    branch: BranchPort,
    instruction: Any,
    chat_param: ChatParam,
    parse_param: ParseParam | None = None,
    clear_messages: bool = False,
    skip_validation: bool = False,
    request_fields: dict | None = None,
) -> Any:
    port = BranchPort.of(branch)
    if clear_messages:
        port.clear_messages()
    if request_fields and chat_param.request_fields is None:
        chat_param = chat_param.with_(request_fields=request_fields)
    _ins, res = await request(port, instruction, chat_param, records=True)
    if skip_validation:
        return res.response
    if parse_param is not None and parse_param.response_format is not None:
        try:
            return await parse(port, res.response, parse_param)
        except ValueError as exc:  # ParseError is a ValueError too: name the requested type
            fmt = parse_param.response_format
            if isinstance(exc, ParseError):
                raise
            raise ParseError(
                f"could not parse the response into {getattr(fmt, '__name__', fmt)}: {exc}",
                target=fmt,
                raw=res.response,
            ) from exc
    if request_fields:
        return map_request_fields(res.response, request_fields)
    return res.response
