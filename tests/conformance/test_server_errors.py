"""The servers' own errors reach the user as lion_nb errors that say what happened and what to
do; a connection the server closed is never reused for a generation (so nothing is sent
twice behind the user's back)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from lion_nb import Branch
from lion_nb.errors import ConnectionLost, ContextWindowError, ProviderError, ServerError
from lion_nb.models.base import ModelRequest
from tests.conformance.suite import MARKS, model

pytestmark = MARKS

TOO_LONG = "Summarise this. " + "lorem ipsum dolor sit amet " * 150  # ~750 tokens


@pytest.mark.parametrize("api", ["chat", "messages"])
async def test_a_request_over_a_slots_window_is_a_readable_error(
    llama_server_4: Any, api: str
) -> None:
    """``--parallel 4 -c 2048`` gives each slot 512 tokens: the model's window is larger."""
    chat_model = model(llama_server_4, api)
    branch = Branch(chat_model=chat_model)
    try:
        with pytest.raises((ContextWindowError, ProviderError)) as info:
            await branch.communicate(TOO_LONG)
    finally:
        await chat_model.aclose()
    assert "context" in str(info.value) and "512" in str(info.value)
    assert len(branch.messages) == 0


async def test_a_request_over_a_slots_window_is_refused_before_sending(
    llama_server_4: Any,
) -> None:
    chat_model = model(llama_server_4, "chat")
    try:
        with pytest.raises(ContextWindowError, match="fit_context=True") as info:
            await Branch(chat_model=chat_model).communicate(TOO_LONG)
    finally:
        await chat_model.aclose()
    assert info.value.window == 512 and info.value.provider_error is None


async def test_a_request_over_llama_cpp_servers_window_says_what_to_do(
    llama_cpp_server: Any,
) -> None:
    """llama_cpp.server answers a streamed request over its window with HTTP 200 and an empty
    body (the reason is only in its log): lion_nb says so and names the fix; given the
    window, lion_nb refuses the request before sending it."""
    chat_model = model(llama_cpp_server, "chat")
    try:
        with pytest.raises(ConnectionLost, match="before the reply began") as info:
            await Branch(chat_model=chat_model).communicate(TOO_LONG * 3)
    finally:
        await chat_model.aclose()
    assert "sent no event at all" in str(info.value) and "context_window=N" in str(info.value)
    windowed = model(llama_cpp_server, "chat", context_window=2048)
    try:
        with pytest.raises(ContextWindowError) as refused:
            await Branch(chat_model=windowed).communicate(TOO_LONG * 3)
    finally:
        await windowed.aclose()
    assert refused.value.window == 2048 and refused.value.provider_error is None


async def test_a_bad_request_carries_llama_servers_own_words(llama_server_1: Any) -> None:
    chat_model = model(llama_server_1, "chat", n=2)
    try:
        with pytest.raises(ProviderError) as info:
            await Branch(chat_model=chat_model).communicate("hi")
    finally:
        await chat_model.aclose()
    assert type(info.value) is ProviderError and info.value.status == 400
    assert "request rejected: Field 'n': Value must be between 1 <= value <= 1" in str(info.value)


async def test_a_bad_request_carries_llama_cpp_servers_own_words(llama_cpp_server: Any) -> None:
    chat_model = model(llama_cpp_server, "chat", temperature="hot", max_retries=0)
    try:
        with pytest.raises(ServerError) as info:
            await Branch(chat_model=chat_model).communicate("hi")
    finally:
        await chat_model.aclose()
    assert "Input should be a valid number" in str(info.value)


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
async def test_sequential_streamed_replies_are_each_sent_once(
    llama_server_1: Any, api: str, caplog: pytest.LogCaptureFixture
) -> None:
    """llama-server closes the connection after each streamed reply, although it promised to
    keep it: a request written to it before the close arrived failed ("server disconnected
    without sending a response", about one call in ten back to back) and the retry loop sent
    it again, unasked. Now no call fails (without retries) and none is retried (with them)."""
    caplog.set_level(logging.INFO, logger="lion_nb.models.http_errors")
    asked = ModelRequest(messages=[{"role": "user", "content": "Say hi."}])
    for retries in (0, 2):
        chat_model = model(llama_server_1, api, max_tokens=2, max_retries=retries)
        try:
            for _ in range(15):  # back to back, as a loop in a cell sends them
                await chat_model.complete(asked)
        finally:
            await chat_model.aclose()
    assert not [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
