import pytest

from lion_nb import Branch
from lion_nb.errors import ExecutionError, ServerError
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.signals import StreamDelta
from tests.support.scripted import held_outside_messages, kinds, recording_branch, scripted


async def test_chat_returns_text_and_records_nothing():
    branch, seen = recording_branch("Hello there", system="sys")
    before = list(branch.messages)
    assert await branch.chat("hi") == "Hello there"
    assert list(branch.messages) == before
    assert "MessageAdded" not in kinds(seen) and "RunStart" not in kinds(seen)


async def test_chat_can_return_the_instruction_and_response_pair():
    branch, _ = recording_branch("pong")
    ins, res = await branch.chat("ping", guidance="be short", return_ins_res_message=True)
    assert isinstance(ins, Instruction) and ins.instruction == "ping" and ins.guidance == "be short"
    assert isinstance(res, AssistantResponse) and res.response == "pong"
    assert res.metadata["usage"]["output_tokens"] >= 1
    assert len(branch.messages) == 0


async def test_chat_sends_history_with_a_real_system_role():
    model = scripted("a", "b")
    branch = Branch(system="Be terse.", chat_model=model)
    await branch.chat_and_record("first")
    await branch.chat("second")
    sent = model.provider.requests[-1].messages
    assert sent == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "second"},
    ]


async def test_chat_streams_deltas_keyed_by_the_response_id():
    branch, seen = recording_branch({"chunks": ["Hel", "lo", "!"]})
    _, res = await branch.chat("x", return_ins_res_message=True)
    deltas = [s for s in seen if isinstance(s, StreamDelta)]
    assert [d.delta for d in deltas] == ["Hel", "lo", "!"]
    assert [d.snapshot for d in deltas] == ["Hel", "Hello", "Hello!"]
    assert {d.message_id for d in deltas} == {res.id}


async def test_failed_call_raises_execution_error_and_clears_injection():
    branch, _ = recording_branch(ServerError("boom", provider="scripted"))
    branch.context_providers.append(lambda b, ins: {"memory": "likes tea"})
    with pytest.raises(ExecutionError, match="boom"):
        await branch.chat("x")
    assert not held_outside_messages(branch, "likes tea")
    assert len(branch.messages) == 0


async def test_unclassified_provider_failure_becomes_execution_error():
    def explode(request):
        raise RuntimeError("kaput")

    branch, _ = recording_branch(explode)
    with pytest.raises(ExecutionError, match="kaput"):
        await branch.chat("x")


async def test_context_providers_inject_context_for_the_call():
    model = scripted("ok")
    branch = Branch(chat_model=model)
    branch.context_providers.append(lambda b, ins: {"memory": "likes tea"})
    ins, _ = await branch.chat("hi", return_ins_res_message=True)
    assert ins.context == [{"memory": "likes tea"}]
    assert "likes tea" in model.provider.requests[0].messages[-1]["content"]
    assert not held_outside_messages(branch, "likes tea")


async def test_progression_selects_the_history_sent():
    model = scripted("1", "2", "3")
    branch = Branch(system="s", chat_model=model)
    await branch.chat_and_record("a")
    await branch.chat_and_record("b")
    await branch.chat("c", progression=[])
    assert model.provider.requests[-1].messages == [{"role": "user", "content": "c"}]


async def test_token_usage_hint_is_added_when_asked():
    model = scripted("1", "2")
    branch = Branch(chat_model=model)
    await branch.chat_and_record("a" * 400)
    await branch.chat("b", include_token_usage_to_model=True)
    assert "about 10" in model.provider.requests[-1].messages[-1]["content"]


async def test_a_reply_replayed_from_a_cassette_says_where_it_came_from(tmp_path):
    import lion_nb

    path = tmp_path / "c.cassette.jsonl"
    with lion_nb.cassette(path, mode="record"):
        live = Branch(chat_model=scripted("recorded answer"))
        await live.communicate("q")
    assert "replayed" not in live.messages[-1].metadata
    with lion_nb.cassette(path, mode="replay"):
        again = Branch(chat_model=scripted())
        assert await again.communicate("q") == "recorded answer"
    marker = again.messages[-1].metadata["replayed"]
    assert marker["cassette"].endswith("c.cassette.jsonl") and marker["call"] == 1
