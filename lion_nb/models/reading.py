"""``iModel.tokenize`` and ``iModel.next_tokens``: what a model reads, and what it would say
next — asked of the models that can tell, refused elsewhere.

Two can: the embedded model (``provider="local"``: its tokenizer, chat template and logits in
process, ``models/local_reads.py``) and llama.cpp's ``llama-server`` behind an HTTP provider
(``provider="openai"`` with its ``base_url``; its ``/apply-template``, ``/tokenize`` and
``/completion``, ``models/prompt_tokens.py``). A server is taken for llama-server when its
``/props`` said so (``iModel.capabilities()``, asked once) or when it has not been asked (under
a cassette, which asks no server); then its own routes decide: a server without them is
refused. Vendor clouds, CLI agents, ``llama_cpp.server`` and the scripted model give no
tokenizer or raw distribution: a ``ConfigurationError`` names the two that do.

Under a cassette a read is a call like any other (recorded in "record" and "auto" modes,
replayed without the model or server): its request is the messages (and the reply's start,
``prefix``) with the option ``read`` ("tokenize", or "next_tokens" with ``k``). A tokenize
reply's text is the tokens as JSON, ``[[id, text, special, message], ...]``; a next_tokens
reply is one token whose ``top`` holds the K alternatives — what a one-token reply with
``logprobs=K`` is.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from lion_nb.cassettes.active import current as current_cassette
from lion_nb.errors import ConfigurationError, ProviderError
from lion_nb.models.base import DeltaSink, ModelRequest, ModelResponse
from lion_nb.models.probe import Probed, capabilities_of, probeable, server_url
from lion_nb.models.prompt_tokens import (
    PromptToken,
    marked,
    message_spans,
    messages_of,
    not_llama_server,
    prompt_tokens,
    server_next_logprobs,
    server_pieces,
)
from lion_nb.sampling import TokenProbability
from lion_nb.tokens import token_choice

__all__ = ["next_tokens", "tokenize"]

_LOCAL, _SERVER = "local", "llama-server"
_TOKENIZE = "show the prompt it reads (tokenize)"
_NEXT = "give its distribution over the next token (next_tokens)"


async def tokenize(model: Probed, messages_or_text: Any) -> list[PromptToken]:
    """The prompt ``model`` reads for ``messages_or_text``, token by token (``iModel``)."""
    messages = messages_of(messages_or_text)
    backend = await _backend(model, _TOKENIZE)

    async def live(request: ModelRequest, sink: DeltaSink | None) -> ModelResponse:
        tokens = await _live_tokenize(model, backend, messages)
        rows = [[t.id, t.text, t.special, t.message] for t in tokens]
        return ModelResponse(text=json.dumps(rows, ensure_ascii=False), model=model.model)

    if current_cassette() is None:
        return await _live_tokenize(model, backend, messages)
    request = ModelRequest(messages=messages, options={"read": "tokenize"})
    response = await _through_cassette(model, request, live)
    return [
        PromptToken(text, id_, special, at) for id_, text, special, at in json.loads(response.text)
    ]


async def next_tokens(
    model: Probed, messages_or_text: Any, k: int = 8, prefix: str | None = None
) -> list[TokenProbability]:
    """The ``k`` most likely next tokens after ``messages_or_text`` (and ``prefix``, the
    start of the reply), with the model's own probabilities, most likely first."""
    messages = messages_of(messages_or_text)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigurationError(f"k={k!r}: give how many likely tokens to list, 1 or more")
    if prefix is not None and not isinstance(prefix, str):
        raise ConfigurationError(f"prefix={prefix!r}: give the start of the reply as text")
    backend = await _backend(model, _NEXT)

    async def live(request: ModelRequest, sink: DeltaSink | None) -> ModelResponse:
        if backend == _LOCAL:
            found = await _local_next(model, messages, prefix, k)
        else:
            found = await _server(model, server_next_logprobs(model, messages, prefix, k), _NEXT)
        top = [(raw.decode("utf-8", "replace"), logprob) for raw, logprob in found]
        first = top[0] if top else ("", 0.0)
        token = token_choice(first[0], first[1], top)
        return ModelResponse(text=token.text, tokens=[token], model=model.model)

    request = ModelRequest(
        messages=messages, prefix=prefix, options={"read": "next_tokens", "k": k}
    )
    response = await _through_cassette(model, request, live)
    top = response.tokens[0].top if response.tokens else []
    return [TokenProbability(text, math.exp(logprob)) for text, logprob in top]


async def _through_cassette(model: Probed, request: ModelRequest, live: Any) -> ModelResponse:
    tape = current_cassette()
    if tape is None:
        return await live(request, None)
    return await tape.complete(model, request, None, live)


async def _backend(model: Probed, what: str) -> str:
    """Which of the two can answer for ``model``, or the refusal naming them."""
    if model.spec.kind == "local":
        return _LOCAL
    if not probeable(model):
        raise _refusal(f"the {model.provider_name!r} provider", what)
    known = await capabilities_of(model)
    if known.server == _SERVER or (known.server is None and not known.probed):
        return _SERVER
    kind = known.server or "a server that is not llama-server"
    raise _refusal(f"the server at {server_url(model)} ({kind})", what)


def _refusal(who: str, what: str) -> ConfigurationError:
    return ConfigurationError(
        f"{who} cannot {what}: that needs the model's own tokenizer and chat template, which "
        "lion_nb reaches on the embedded model (iModel(provider='local')) and on llama.cpp's "
        "llama-server (iModel(provider='openai', base_url='http://host:port/v1'))"
    )


async def _server(model: Probed, call: Any, what: str) -> Any:
    """A llama-server call; a server without the route is refused as not llama-server."""
    try:
        return await call
    except ProviderError as error:
        if not_llama_server(error):
            raise _refusal(f"the server at {server_url(model)}", what) from error
        raise


async def _live_tokenize(model: Probed, backend: str, messages: list[dict[str, Any]]) -> Any:
    if backend == _SERVER:
        found = await _server(model, server_pieces(model.provider, messages), _TOKENIZE)
        return prompt_tokens(found[1], found[0], found[2])
    # lazy: the embedded model's modules load when it is used (as the registry loads providers)
    from lion_nb.models import local_reads

    provider = model.provider

    def work(_job: Any) -> list[PromptToken]:
        llama = provider.loaded().llama
        prompt, bos = local_reads.render(llama, messages)
        renders = [local_reads.render(llama, marked(messages, i))[0] for i in range(len(messages))]
        return prompt_tokens(
            local_reads.pieces(llama, prompt, bos), prompt, message_spans(prompt, renders)
        )

    return await local_reads.run_in_worker(work)


async def _local_next(
    model: Probed, messages: list[dict[str, Any]], prefix: str | None, k: int
) -> list[tuple[bytes, float]]:
    # lazy: as above
    from lion_nb.models import local_reads

    provider = model.provider
    found = await local_reads.run_in_worker(
        lambda job: local_reads.next_logprobs(provider, messages, prefix, k, job)
    )
    if found is None:  # stopped: only a cancellation stops it
        raise asyncio.CancelledError
    return found
