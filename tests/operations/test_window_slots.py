"""A request fits the window of one slot of its server, not the model's: the request path asks
the server first (``iModel.capabilities()``), then fits (``fit_context=True``) or refuses
before sending with a ``ContextWindowError`` naming the slot; a server's own overflow report
("exceeds the available context size (512 tokens)") is the same error, and its window is
remembered."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ContextWindowError
from lion_nb.models import capabilities
from tests.servers.chat_server import ErrorReply
from tests.servers.llama_like import PROPS_4, LikeServer

WORDS = "alpha beta gamma delta " * 50  # 1,100 characters: ~275 estimated tokens

LLAMA_SERVER_OVERFLOW = {
    "error": {
        "code": 400,
        "message": "request (700 tokens) exceeds the available context size (512 tokens), "
        "try increasing it",
        "type": "exceed_context_size_error",
    }
}


@pytest.fixture(autouse=True)
def _forget_servers() -> Iterator[None]:
    yield
    capabilities.forget()


@pytest.fixture
def four_slots() -> Iterator[LikeServer]:
    with LikeServer({"/props": PROPS_4}).start() as server:  # echo replies
        yield server


async def test_a_request_is_fitted_to_the_slot_window(four_slots: LikeServer) -> None:
    model = iModel(provider="openai", model="m", base_url=four_slots.base_url)
    branch = Branch(chat_model=model)
    await branch.communicate(WORDS + "one")  # ~275 tokens: fits 512 with room for the reply
    await branch.communicate(WORDS + "two", fit_context=True)
    sent = four_slots.last_request.body["messages"]
    assert [m["content"].endswith("two") for m in sent] == [True]  # the first turn was cut
    assert branch.messages[-2].metadata["context_fit"]["window"] == 512
    await model.aclose()


async def test_a_request_that_cannot_fit_the_slot_is_refused_before_sending(
    four_slots: LikeServer,
) -> None:
    model = iModel(provider="openai", model="m", base_url=four_slots.base_url)
    branch = Branch(chat_model=model)
    await branch.communicate(WORDS + "one")
    posts = len(four_slots.requests)
    with pytest.raises(ContextWindowError) as caught:
        await branch.communicate(WORDS + "two")
    assert len(four_slots.requests) == posts  # nothing sent
    message = str(caught.value)
    assert "512-token context window" in message and "fit_context=True" in message
    assert "one of its server's 4 slots, 512 tokens each" in message
    assert caught.value.window == 512 and len(branch.messages) == 2
    await model.aclose()


async def test_the_servers_overflow_report_is_a_context_window_error() -> None:
    """A server that could not be asked (no /props) refuses with HTTP 400: the same error as
    lion_nb's own, the provider's words kept, and the window it named remembered."""
    with LikeServer({}).start() as server:
        server.script(ErrorReply(400, LLAMA_SERVER_OVERFLOW))
        model = iModel(provider="openai", model="m", base_url=server.base_url)
        branch = Branch(chat_model=model)
        with pytest.raises(ContextWindowError, match="available context size") as caught:
            await branch.communicate("hello")
        assert caught.value.provider_error is not None and len(branch.messages) == 0
        assert caught.value.window == 512 and "512-token context window" in str(caught.value)
        assert model.context_window == 512  # the next request is fitted to it
        await model.aclose()
