"""The prompt as the model reads it, token by token, and which message each token spells.

``PromptToken``: one token of a prompt (``text``, ``id``, ``special``, ``message``).
``prompt_tokens`` builds them from a tokenizer's pieces and the chat template's renders;
``message_spans`` finds where each message's content lies in the rendered prompt, exactly,
whatever the template: the template is rendered once more per message with that message's
content replaced by a marker, and the content is what differs between the two renders (the
common start and end are the template's own). Scaffolding — role markers, separators, a
system prompt the template adds by itself, the assistant's marker at the end — belongs to no
message (``message=None``).

The calls to llama.cpp's ``llama-server`` live here too (``server_pieces``,
``server_next_logprobs``): its ``/apply-template`` renders the model's chat template,
``/tokenize`` (``with_pieces``) gives ids and bytes, and ``/completion`` with ``n_predict=1``
and ``n_probs=K`` the distribution of the next token — the raw probabilities
(``post_sampling_probs`` off: a softmax of the logits over the whole vocabulary, before any
sampler). The prompt is sent as token ids, tokenized as its chat endpoint does (the template's
text with special tokens parsed and the BOS the model wants; a reply's start as plain text).
llama-server does not say which tokens are control tokens; one batched ``/tokenize`` of each
distinct piece does: a control token's text gives that token only where special tokens are
parsed.
"""

from __future__ import annotations

import asyncio
import codecs
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lion_nb.errors import ConfigurationError, MalformedResponse, ProviderError
from lion_nb.models.capabilities import server_root
from lion_nb.models.probe import concurrency_limit
from lion_nb.models.slots import slots_for

__all__ = [
    "MARK",
    "PromptToken",
    "message_spans",
    "messages_of",
    "prompt_tokens",
    "server_next_logprobs",
    "server_pieces",
]

MARK = "\ue000lion-nb-content\ue001"
"""What a message's content is replaced by to find where it lies in the rendered prompt
(private-use characters at both ends: no content starts or ends with them by chance)."""

Piece = tuple[int, bytes, bool]  # a token's id, bytes and whether it is a control token
_SEPARATOR = -1  # between the pieces of one batched /tokenize (token ids pass through)


@dataclass(frozen=True, slots=True)
class PromptToken:
    """One token of a prompt as the model reads it.

    ``text``: what it spells (a special token as its marker, e.g. ``<|im_start|>``; a token
    that ends inside a character spells "" and the token that completes the character carries
    it, so the texts join to the prompt). ``id``: its id in the model's vocabulary.
    ``special``: a control token (markup the template writes, read as such only where special
    tokens are parsed). ``message``: the index, in the messages given, of the message whose
    content the token spells (a token that straddles content and scaffolding counts as
    content); None for the template's scaffolding."""

    text: str
    id: int
    special: bool
    message: int | None = None


def messages_of(messages_or_text: Any) -> list[dict[str, Any]]:
    """A string as one user turn, or a list of ``{"role", "content"}`` dicts as given."""
    if isinstance(messages_or_text, str):
        return [{"role": "user", "content": messages_or_text}]
    if isinstance(messages_or_text, Sequence) and all(
        isinstance(m, Mapping) and isinstance(m.get("role"), str) for m in messages_or_text
    ):
        return [dict(m) for m in messages_or_text]
    raise ConfigurationError(
        f"give a text (one user turn) or a list of {{'role', 'content'}} dicts, not "
        f"{type(messages_or_text).__name__}"
    )


def marked(messages: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    """``messages`` with message ``index``'s content replaced by ``MARK``."""
    return [{**m, "content": MARK} if i == index else m for i, m in enumerate(messages)]


def _common_start(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))  # bisect on slices: C-speed comparisons
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _common_end(a: str, b: str, most: int) -> int:
    low, high = 0, most
    while low < high:
        mid = (low + high + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            low = mid
        else:
            high = mid - 1
    return low


def message_spans(prompt: str, renders: Sequence[str]) -> list[tuple[int, int]]:
    """Where each message's content lies in ``prompt``, as ``[start, end)`` character
    offsets: ``renders[i]`` is the prompt rendered with message ``i``'s content replaced by
    ``MARK``; what differs from ``prompt`` is the content."""
    spans = []
    for other in renders:
        start = _common_start(prompt, other)
        end = len(prompt) - _common_end(prompt, other, min(len(prompt), len(other)) - start)
        spans.append((start, max(start, end)))
    return spans


def prompt_tokens(
    pieces: Sequence[Piece], prompt: str, spans: Sequence[tuple[int, int]]
) -> list[PromptToken]:
    """Tokens from a tokenizer's pieces of ``prompt`` (perhaps after a BOS the template did
    not write), each with the message whose span (``message_spans``) it overlaps."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    texts = [decoder.decode(raw) for _, raw, _ in pieces]
    if texts:
        texts[-1] += decoder.decode(b"", final=True)
    spelled = "".join(texts)
    shift = len(spelled) - len(prompt) if spelled.endswith(prompt) else 0  # a BOS before it
    order = sorted((s, e, i) for i, (s, e) in enumerate(spans) if e > s)
    out: list[PromptToken] = []
    at, j = -shift, 0
    for (token, _, special), text in zip(pieces, texts, strict=True):
        start, end = at, at + max(len(text), 1)  # "" (a character's first bytes): its character
        at += len(text)
        while j < len(order) and order[j][1] <= start:
            j += 1
        message = order[j][2] if j < len(order) and order[j][0] < end else None
        out.append(PromptToken(text, int(token), bool(special), message))
    return out


# -- llama.cpp's llama-server -----------------------------------------------------------------


async def _post(provider: Any, path: str, body: dict[str, Any]) -> Any:
    return await provider.post_json(f"{server_root(provider.base_url)}{path}", body)


async def _apply_template(provider: Any, messages: list[dict[str, Any]]) -> str:
    reply = await _post(provider, "/apply-template", {"messages": messages})
    if not isinstance(reply, dict) or not isinstance(reply.get("prompt"), str):
        raise MalformedResponse("/apply-template did not answer a prompt", provider=provider.name)
    return reply["prompt"]


async def _token_ids(provider: Any, content: Any, *, special: bool, bos: bool) -> list[Any]:
    body = {"content": content, "add_special": bos, "parse_special": special}
    reply = await _post(provider, "/tokenize", body)
    tokens = reply.get("tokens") if isinstance(reply, dict) else None
    if not isinstance(tokens, list):
        raise MalformedResponse("/tokenize did not answer tokens", provider=provider.name)
    return tokens


def _piece_bytes(piece: Any) -> bytes:
    """A /tokenize piece: text, or a list of byte values when it is not whole UTF-8."""
    return piece.encode("utf-8") if isinstance(piece, str) else bytes(piece)


async def _control_tokens(provider: Any, candidates: dict[int, str]) -> set[int]:
    """Which of ``candidates`` (id -> text) are control tokens: their text gives them only
    where special tokens are parsed (two batched /tokenize calls)."""
    ids = list(candidates)
    content: list[Any] = []
    for token in ids:
        content += [candidates[token], _SEPARATOR]
    parsed, plain = await asyncio.gather(
        _token_ids(provider, content, special=True, bos=False),
        _token_ids(provider, content, special=False, bos=False),
    )

    def split(found: list[Any]) -> list[list[Any]]:
        groups: list[list[Any]] = [[]]
        for item in found:
            if item == _SEPARATOR:
                groups.append([])
            else:
                groups[-1].append(item)
        return groups[: len(ids)]

    return {
        token
        for token, as_markup, as_text in zip(ids, split(parsed), split(plain), strict=True)
        if as_markup == [token] and as_text != [token]
    }


async def server_pieces(
    provider: Any, messages: list[dict[str, Any]]
) -> tuple[str, list[Piece], list[tuple[int, int]]]:
    """The prompt llama-server renders of ``messages``, its pieces and where each message's
    content lies in it (``message_spans``)."""
    renders = await asyncio.gather(
        _apply_template(provider, messages),
        *(_apply_template(provider, marked(messages, i)) for i in range(len(messages))),
    )
    prompt = renders[0]
    body = {"content": prompt, "add_special": True, "with_pieces": True}
    reply = await _post(provider, "/tokenize", body)
    tokens = reply.get("tokens") if isinstance(reply, dict) else None
    if not isinstance(tokens, list) or not all(isinstance(t, dict) for t in tokens):
        raise MalformedResponse("/tokenize did not answer pieces", provider=provider.name)
    texts = {int(t["id"]): t["piece"] for t in tokens if isinstance(t.get("piece"), str)}
    control = await _control_tokens(provider, texts) if texts else set()
    pieces = [(int(t["id"]), _piece_bytes(t["piece"]), int(t["id"]) in control) for t in tokens]
    return prompt, pieces, message_spans(prompt, renders[1:])


async def server_next_logprobs(
    model: Any, messages: list[dict[str, Any]], prefix: str | None, k: int
) -> list[tuple[bytes, float]]:
    """The ``k`` most likely next tokens after ``messages`` (and ``prefix``) on llama-server,
    as bytes and raw log-probabilities."""
    provider = model.provider
    prompt = await _apply_template(provider, messages)
    parts = [_token_ids(provider, prompt, special=True, bos=True)]
    if prefix:
        parts.append(_token_ids(provider, prefix, special=False, bos=False))
    ids = [token for part in await asyncio.gather(*parts) for token in part]
    body = {
        "prompt": ids,
        "n_predict": 1,
        "n_probs": k,
        "post_sampling_probs": False,
        "temperature": 0,
        "cache_prompt": True,
    }
    limit = concurrency_limit(model)  # a completion takes one of the server's slots
    if limit is None:
        reply = await _post(provider, "/completion", body)
    else:
        async with slots_for(limit[0]).hold(limit[1]):
            reply = await _post(provider, "/completion", body)
    try:
        top = reply["completion_probabilities"][0]["top_logprobs"]
        return [(_piece_bytes(t["bytes"]), float(t["logprob"])) for t in top[:k]]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise MalformedResponse(
            "/completion did not answer the next token's probabilities (n_probs)",
            provider=provider.name,
        ) from exc


def not_llama_server(error: ProviderError) -> bool:
    """The server has no such route: it is not llama-server."""
    return error.status in (404, 405, 501)
