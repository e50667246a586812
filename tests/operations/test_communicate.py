import asyncio

import pytest
from pydantic import BaseModel

from lion_nb import Branch
from lion_nb.errors import ParseError, ServerError
from lion_nb.signals import (
    CallEnd,
    CallStart,
    MessageAdded,
    RunEnd,
    RunFailed,
    RunStart,
    StreamDelta,
)
from tests.support.scripted import RECORDED_EXCHANGE, kinds, recording_branch, scripted


class Answer(BaseModel):
    answer: str
    confidence: float


async def test_records_exchange_under_one_lifecycle():
    branch, seen = recording_branch("hi there")
    assert await branch.communicate("hello") == "hi there"
    assert kinds(seen) == ["RunStart", *RECORDED_EXCHANGE, "RunEnd"]
    start_call, end_call = (s for s in seen if type(s).__name__ in ("CallStart", "CallEnd"))
    assert start_call.records and end_call.recorded and end_call.outcome == "done"
    start, end = seen[0], seen[-1]
    assert isinstance(start, RunStart) and isinstance(end, RunEnd)
    assert end.run_id == start.run_id and end.operation == "communicate"
    assert end.result == "hi there" and end.duration_ms >= 0


async def test_run_end_reports_usage_of_this_run_only():
    branch, seen = recording_branch(
        {"text": "a", "usage": {"input_tokens": 100, "output_tokens": 5, "total_cost_usd": 0.5}},
        {"text": "b", "usage": {"input_tokens": 7, "output_tokens": 2, "total_cost_usd": 0.25}},
    )
    await branch.communicate("one")
    await branch.communicate("two")
    ends = [s for s in seen if isinstance(s, RunEnd)]
    assert (ends[1].input_tokens, ends[1].output_tokens, ends[1].total_cost_usd) == (7, 2, 0.25)


async def test_failure_emits_run_failed_and_reraises():
    err = ServerError("down", provider="scripted", status=503)
    branch, seen = recording_branch(err)
    with pytest.raises(ServerError):
        await branch.communicate("x")
    assert kinds(seen) == ["RunStart", "CallStart", "CallEnd", "RunFailed"]
    assert isinstance(seen[-1], RunFailed) and seen[-1].error is err


async def test_clear_messages_keeps_system_and_clears_history_first():
    branch, _ = recording_branch("1", "2", system="sys")
    await branch.communicate("a")
    await branch.communicate("b", clear_messages=True)
    assert [m.role for m in branch.messages] == ["system", "user", "assistant"]
    assert branch.messages[1].instruction == "b"


async def test_skip_validation_returns_recorded_text():
    branch, _ = recording_branch('{"answer": "x", "confidence": 1}')
    out = await branch.communicate("q", response_format=Answer, skip_validation=True)
    assert out == '{"answer": "x", "confidence": 1}'


async def test_response_format_parses_and_instruction_carries_schema():
    model = scripted({"json": {"Answer": "Paris", "confidence": 0.9}})
    branch = Branch(chat_model=model)
    out = await branch.communicate("Capital of France?", response_format=Answer)
    assert out == Answer(answer="Paris", confidence=0.9)
    assert branch.messages[0].response_schema["title"] == "Answer"
    assert model.provider.requests[0].response_schema == Answer.model_json_schema()


async def test_parse_failure_names_the_requested_type_and_keeps_the_record():
    branch, seen = recording_branch("not json at all", "still not json")
    with pytest.raises(ParseError, match="Answer") as info:
        await branch.communicate("q", response_format=Answer, num_parse_retries=1)
    assert info.value.target is Answer
    assert [m.role for m in branch.messages] == ["user", "assistant"]
    assert kinds(seen)[-1] == "RunFailed"


async def test_request_fields_fuzzy_mapping_drops_unmatched():
    branch, _ = recording_branch('Sure: {"Title": "Dune", "authr": "Herbert", "extra": 1}')
    out = await branch.communicate("book?", request_fields=["title", "author", "year"])
    assert out == {"title": "Dune", "author": "Herbert"}


async def test_num_parse_retries_above_five_warns_and_clamps():
    replies = ["bad"] * 10
    model = scripted(*replies)
    branch = Branch(chat_model=model)
    with pytest.warns(UserWarning, match="clamped to 5"), pytest.raises(ParseError):
        await branch.communicate("q", response_format=Answer, num_parse_retries=9)
    # 1 exchange + 5 repair turns
    assert len(model.provider.requests) == 6


async def test_cancellation_is_a_stopped_run_end():
    branch, seen = recording_branch({"text": "slow " * 50, "delay": 0.05})
    task = asyncio.create_task(branch.communicate("x"))
    await asyncio.sleep(0.12)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert kinds(seen) == ["RunStart", "CallStart", "CallEnd", "RunEnd"] and seen[-1].stopped
    (end_call,) = (s for s in seen if type(s).__name__ == "CallEnd")
    assert end_call.outcome == "stopped" and not end_call.recorded  # on_stop="discard"


async def test_observer_failure_does_not_change_result(caplog):
    branch, _ = recording_branch("fine")

    def broken(signal):
        raise RuntimeError("observer bug")

    async def broken_async(signal):
        raise RuntimeError("async observer bug")

    branch.observe(RunEnd, MessageAdded, handler=broken)
    branch.observe(MessageAdded, handler=broken_async)
    assert await branch.communicate("x") == "fine"
    assert "observer" in caplog.text and "observer bug" in caplog.text


# ----- on_stop: what a stopped exchange keeps ------------------------------------------------
async def _stop_when(branch: Branch, coro, word: str) -> None:
    """Cancel ``coro`` once ``word`` has streamed on ``branch``."""
    seen = asyncio.Event()
    branch.subscribe((StreamDelta,), lambda s: seen.set() if word in s.snapshot else None)
    task = asyncio.ensure_future(coro)
    await asyncio.wait_for(seen.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_on_stop_record_keeps_the_instruction_and_the_partial_reply():
    branch, seen = recording_branch({"text": "One Two Three Four Five Six", "delay": 0.02})
    streamed: set = set()
    branch.subscribe((StreamDelta,), lambda s: streamed.add(s.message_id))
    await _stop_when(
        branch, branch.communicate("count", guidance="slowly", on_stop="record"), "Three"
    )
    ins, reply = branch.messages
    assert ins.instruction == "count" and ins.guidance == "slowly"  # as the verb built it
    assert reply.metadata["stopped"] is True and reply.response.startswith("One Two Three")
    assert "Six" not in reply.response
    assert streamed == {reply.id}  # recorded under the id it streamed with
    end_call = next(s for s in seen if isinstance(s, CallEnd))
    assert end_call.outcome == "stopped" and end_call.recorded
    assert kinds(seen)[-1] == "RunEnd" and seen[-1].stopped
    assert kinds(seen).index("MessageAdded") < kinds(seen).index("RunEnd")  # before the end


async def test_on_stop_discard_is_the_default_and_records_nothing():
    branch, _ = recording_branch({"text": "One Two Three Four Five Six", "delay": 0.02})
    await _stop_when(branch, branch.communicate("count"), "Two")
    assert len(branch.messages) == 0


async def test_on_stop_record_before_any_text_keeps_the_instruction_alone():
    branch, _ = recording_branch({"text": "late", "delay": 0.5})
    started = asyncio.Event()
    branch.subscribe((CallStart,), lambda s: started.set())
    task = asyncio.ensure_future(branch.communicate("hello?", on_stop="record"))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [m.role for m in branch.messages] == ["user"]


async def test_on_stop_accepts_discard_or_record_only():
    branch, seen = recording_branch("x")
    with pytest.raises(ValueError, match="on_stop must be 'discard' or 'record'"):
        await branch.communicate("q", on_stop="keep")
    with pytest.raises(ValueError, match="on_stop"):
        await branch.operate(instruction="q", on_stop="yes")
    assert len(branch.messages) == 0 and seen == []


async def test_on_stop_record_over_loopback_http_keeps_what_the_server_sent():
    from lion_nb import iModel
    from tests.servers.chat_server import Reply, start_chat_server

    words = [f"w{i} " for i in range(80)]
    with start_chat_server() as server:
        server.script(Reply(text=words, delay=0.02))
        model = iModel(provider="openai", model="m", base_url=server.base_url, api_key="k")
        branch = Branch(system="S", chat_model=model)
        await _stop_when(branch, branch.communicate("go", on_stop="record"), "w5 ")
        await model.aclose()
    ins, reply = branch.messages[1:]
    assert ins.text == "go" and reply.metadata["stopped"] is True
    assert reply.response.startswith("w0 w1 w2 w3 w4 w5") and "w79" not in reply.response


async def test_a_keyboard_interrupt_is_a_stop_too():
    branch, seen = recording_branch({"text": "One Two", "error": KeyboardInterrupt()})
    with pytest.raises(KeyboardInterrupt):
        await branch.communicate("count", on_stop="record")
    _ins, reply = branch.messages
    assert reply.metadata["stopped"] is True and reply.response == "One Two"
    assert isinstance(seen[-1], RunEnd) and seen[-1].stopped  # not a failure: the user stopped
