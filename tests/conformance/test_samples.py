"""``Conversation(...).asample(5)`` on real servers: every sample is a real reply or a failure
shown as one, never an empty reply recorded as an answer."""

from __future__ import annotations

import pytest

from lion_nb import Branch, Session
from lion_nb.errors import ConnectionLost, ProviderError
from lion_nb.messages import AssistantResponse
from lion_nb.render.tokens_html import samples_html
from lion_nb.session.conversation import Conversation
from lion_nb.tokens import Samples
from tests.conformance.matrix import Cell
from tests.conformance.suite import MARKS, cells, model, outcome

pytestmark = MARKS


async def sample(
    request: pytest.FixtureRequest, server: str, api: str, **options: object
) -> Samples:
    chat_model = model(request.getfixturevalue(server), api, max_tokens=6, **options)
    session, branch = Session(), Branch(chat_model=chat_model)
    session.include_branches(branch)
    conv = Conversation(branch)
    try:
        await conv.asend("Name a colour.")
        return await conv.asample(5, temperature=0.8)
    finally:
        await chat_model.aclose()


def replies_are_real(samples: Samples) -> None:
    for branch, reply in zip(samples.branches, samples.replies, strict=True):
        assert isinstance(reply, AssistantResponse) and branch.messages[-1] is reply
        assert reply.text.strip(), "an empty reply was recorded as an answer"
        assert reply.metadata.get("finish_reason") in ("stop", "length")


@pytest.mark.parametrize(("server", "api", "cell"), cells("samples"))
async def test_five_samples_all_arrive(
    request: pytest.FixtureRequest, server: str, api: str, cell: Cell
) -> None:
    samples = await outcome(cell, lambda: sample(request, server, api))
    if samples is None:
        return
    assert samples.failed == 0 and len(samples) == 5, samples.failure_note()
    replies_are_real(samples)


async def test_samples_a_server_cut_are_failures_never_empty_replies(
    request: pytest.FixtureRequest,
) -> None:
    """``llama_cpp.server`` ends the running reply when the next request arrives (HTTP 200, a
    role-only chunk, ``[DONE]``). lion_nb sends it one at a time; a user who says
    ``max_concurrent=5`` gets what the server does then: each cut sample is a failure saying
    so, shown failed, never an empty reply recorded as an answer."""
    server, api, cell = "llama_cpp_server", "chat", Cell("cut", ConnectionLost, "max_concurrent=1")
    samples = await sample(request, server, api, max_concurrent=5)
    assert samples.total == 5 and len(samples) + samples.failed == 5
    replies_are_real(samples)
    for error in samples.errors:
        assert isinstance(error, ProviderError)
        if isinstance(error, ConnectionLost):
            assert "the server closed the stream before the reply" in str(error)
            assert cell.fix in str(error)
    if samples.failed:
        note = f"{samples.failed} of 5 failed: "
        assert samples.failure_note().startswith(note)
        assert note in samples_html(samples) and note in str(samples)
