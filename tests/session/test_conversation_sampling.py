"""``Conversation.asample`` and ``view.asample``: n replies to one turn, run concurrently as
forks, and where they agree."""

from __future__ import annotations

import pytest

from lion_nb import Branch, Session, iModel
from lion_nb.errors import ConnectionLost, ServerError
from lion_nb.messages import AssistantResponse
from lion_nb.render.tokens_html import samples_html
from lion_nb.session.conversation import Conversation
from lion_nb.tokens import Samples

ANSWERS = ["The sky is blue today.", "The sky is grey.", "The sea is blue.", "The sky is blue!"]


def conversation(*replies: object, delay: float = 0.0) -> tuple[Conversation, Branch, iModel]:
    model = iModel(provider="scripted", replies=["First answer.", *replies], delay=delay)
    session = Session()
    branch = Branch(system="Be brief.", chat_model=model)
    session.include_branches(branch)
    return Conversation(branch), branch, model


async def test_samples_run_concurrently_as_labelled_forks_and_say_where_they_agree() -> None:
    conv, branch, model = conversation(*ANSWERS, delay=0.01)
    await conv.asend("Describe the sky.")
    provider = model.provider
    live, most = 0, 0
    complete = provider.complete

    async def counted(request, on_delta=None):  # type: ignore[no-untyped-def]
        nonlocal live, most
        live += 1
        most = max(most, live)
        try:
            return await complete(request, on_delta)
        finally:
            live -= 1

    provider.complete = counted
    samples = await conv.asample(4, temperature=0.8, top_p=0.9)
    assert isinstance(samples, Samples) and len(samples) == 4
    assert sorted(samples.texts) == sorted(ANSWERS)
    assert most == 4  # concurrently: all four were being answered at once
    assert all(r.options["temperature"] == 0.8 for r in model.provider.requests[1:])
    assert all(r.options["top_p"] == 0.9 for r in model.provider.requests[1:])
    assert sorted(r.options["seed"] for r in model.provider.requests[1:]) == [0, 1, 2, 3]
    names = sorted(b.name for b in samples.branches)
    assert names[0] == "sample 1/4 · temperature 0.8 · top-p 0.9"
    assert samples.label() == "temperature 0.8 · top-p 0.9"
    # where they agree: "The" for all, then they split
    assert samples.shared == 1 and samples.shared_prefix == "The " and samples.diverges_at == 1
    assert samples.agreement[0] == 1.0 and samples.agreement[1] == 0.75
    # each fork shares the instruction and is one more alternative of the reply
    assert conv.branch is samples.branches[0]
    assert len(conv.alternatives(2)) == 5
    assert all(b.messages[1].id == branch.messages[1].id for b in samples.branches)
    assert all(isinstance(b.messages[-1], AssistantResponse) for b in samples.branches)
    html = samples_html(samples)
    assert html.count('class="lion-sample"') == 4 and "temperature 0.8" in html


async def test_a_failed_sample_leaves_no_fork_and_the_others_are_kept() -> None:
    conv, branch, _ = conversation("One.", ServerError("down", provider="scripted"), "Two.")
    await conv.asend("Count.")
    session = branch.session
    assert session is not None
    samples = await conv.asample(3)
    assert sorted(samples.texts) == ["One.", "Two."] and len(samples.errors) == 1
    assert len(session.branches) == 3
    assert conv.branch in samples.branches


async def test_bad_counts_are_refused() -> None:
    conv, _, _ = conversation()
    await conv.asend("hi")
    with pytest.raises(ValueError, match="1 to 20"):
        await conv.asample(0)


async def test_the_chat_view_samples_and_shows_the_first() -> None:
    from lion_nb.widgets.chat_view import BranchView

    _, branch, _ = conversation(*ANSWERS[:3])
    view = BranchView(branch)
    await view.conversation.asend("Describe the sky.")
    samples = await view.asample(n=3, temperature=1.5)
    assert len(samples) == 3 and view.branch is samples.branches[0]
    assert "temperature 1.5" in (view.branch.name or "")
    view.close()


async def test_failed_samples_are_shown_failed_never_as_empty_replies() -> None:
    cut = ConnectionLost(
        "the server closed the stream before the reply began ([DONE] without a finish reason)",
        provider="openai",
    )
    conv, branch, _ = conversation("The sky is blue.", cut, "The sky is grey.", cut, "The sky is.")
    await conv.asend("Describe the sky.")
    samples = await conv.asample(5)
    assert samples.failed == 2 and samples.total == 5 and len(samples) == 3
    assert all(e is cut for e in samples.errors)
    assert "" not in samples.texts  # the failures are not replies
    # agreement is counted over the three replies received
    assert samples.shared == 2 and samples.agreement[:3] == [1.0, 1.0, 2 / 3]
    note = (
        "2 of 5 failed: ConnectionLost: [openai] the server closed the stream before the "
        "reply began ([DONE] without a finish reason) (×2)"
    )
    assert samples.failure_note() == note
    assert str(samples).splitlines()[-1] == note
    assert "2 of 5 failed" in repr(samples)
    html = samples_html(samples)
    assert html.count('class="lion-sample"') == 3
    assert 'class="lion-samples-failed lion-failed" role="status">2 of 5 failed: ' in html
    assert branch.session is not None and len(branch.session.branches) == 4  # no failed fork


def test_a_sample_set_renders_as_text_and_in_rich() -> None:
    import io

    from rich.console import Console

    samples = Samples([None, None], [_reply("Yes, blue."), _reply("Yes, grey.")], 0.8)
    samples.errors.append(ServerError("down", provider="openai"))
    samples.asked = 3
    console = Console(file=io.StringIO(), width=60, color_system=None)
    console.print(samples)
    assert console.file.getvalue() == (  # type: ignore[attr-defined]
        "2 samples · temperature 0.8 · 1 shared\n"
        "1. Yes, blue.\n"
        "2. Yes, grey.\n"
        "1 of 3 failed: ServerError: [openai] down\n"
    )


def _reply(text: str) -> AssistantResponse:
    return AssistantResponse(response=text)


@pytest.mark.parametrize("api", ["responses", "anthropic"])
async def test_samples_of_an_api_without_a_seed_are_asked_without_one(api: str) -> None:
    """OpenAI's Responses API and Anthropic's take no ``seed``: sampling there must not send
    one (it was refused by name, and every sample failed)."""
    from tests.servers.anthropic_server import start_anthropic_server
    from tests.servers.vendor_servers import start_responses_server

    with start_anthropic_server() if api == "anthropic" else start_responses_server() as server:
        kw: dict[str, object] = {"provider": "openai", "api": "responses"}
        if api == "anthropic":
            kw = {"provider": "anthropic", "api_key": "sk-ant-test-0123456789"}
        model = iModel(model="m", base_url=server.base_url, **kw)
        session, branch = Session(), Branch(chat_model=model)
        session.include_branches(branch)
        conv = Conversation(branch)
        await conv.asend("Name a colour.")
        samples = await conv.asample(3, temperature=0.9)
        await model.aclose()
    assert samples.failed == 0 and len(samples) == 3
    bodies = [r["body"] if isinstance(r, dict) else r.body for r in server.requests]
    assert all("seed" not in body for body in bodies[1:])
    assert all("seed" not in b.metadata["sample"] for b in samples.branches)


@pytest.mark.parametrize("api", ["responses", "anthropic"])
async def test_regenerate_at_a_temperature_asks_an_api_without_a_seed_without_one(
    api: str,
) -> None:
    """The same rule for ``aregenerate(temperature=)`` (the view's "Regenerate at temperature
    0.8"): a seed only where the API takes one."""
    from tests.servers.anthropic_server import start_anthropic_server
    from tests.servers.vendor_servers import start_responses_server

    with start_anthropic_server() if api == "anthropic" else start_responses_server() as server:
        kw: dict[str, object] = {"provider": "openai", "api": "responses"}
        if api == "anthropic":
            kw = {"provider": "anthropic", "api_key": "sk-ant-test-0123456789"}
        model = iModel(model="m", base_url=server.base_url, **kw)
        session, branch = Session(), Branch(chat_model=model)
        session.include_branches(branch)
        conv = Conversation(branch)
        await conv.asend("Name a colour.")
        fork = await conv.aregenerate(temperature=0.8)
        await model.aclose()
    assert fork.messages[-1].role == "assistant"
    assert fork.metadata["regenerated"] == {"temperature": 0.8}
    bodies = [r["body"] if isinstance(r, dict) else r.body for r in server.requests]
    assert "seed" not in bodies[-1] and bodies[-1]["temperature"] == 0.8
