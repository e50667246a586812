"""run(): recorded CLI stream, lifecycle, deltas, deadline and cleanup on every exit (ADR D3/D4).

Offline: the scripted CLI model and ``chunk_list`` (tests/support/chunk_provider.py), a provider
that streams exactly the chunks a test gives it and counts how often its stream was closed."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time

import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import (
    AuthenticationError,
    ExecutionError,
    ProviderError,
    ProviderTimeout,
    ServerError,
)
from lion_nb.messages import (
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Instruction,
)
from lion_nb.models.base import Chunk
from lion_nb.port.lifecycle import suppress_lifecycle
from lion_nb.signals import MessageAdded, RunEnd, RunFailed, RunStart, StreamDelta
from lion_nb.usage import RunUsage, current_run_usage
from tests.support.chunk_provider import (
    chunk_model,
    result,
    system,
    text,
    tool_result,
    tool_use,
    use_chunk_provider,
)
from tests.support.scripted import held_outside_messages, kinds


@pytest.fixture(autouse=True)
def _chunk_provider(monkeypatch):
    use_chunk_provider(monkeypatch)


def cli(*replies, **kw) -> iModel:
    return iModel(provider="scripted", cli=True, replies=list(replies), **kw)


def observed(model: iModel, system_text: str | None = None) -> tuple[Branch, list]:
    branch = Branch(system=system_text, chat_model=model)
    seen: list = []
    branch.observe(handler=seen.append)
    return branch, seen


async def collect(gen) -> list:
    return [m async for m in gen]


def added(seen: list) -> list:
    return [s.message for s in seen if isinstance(s, MessageAdded)]


# ----- order, records, signals ------------------------------------------------------------


async def test_instruction_first_then_every_message_recorded_before_it_is_yielded():
    branch, seen = observed(
        cli(
            {
                "text": "Let me look.",
                "thinking": "plan",
                "tool_calls": [
                    {
                        "name": "Read",
                        "arguments": {"path": "a.txt"},
                        "output": "hello",
                        "text_after": "It says hello.",
                    }
                ],
            }
        ),
        system_text="sys",
    )
    yielded = []
    async for message in branch.run("read a.txt"):
        assert message in branch.messages  # recorded before it was yielded
        yielded.append(message)
    assert [type(m).__name__ for m in yielded] == [
        "Instruction",
        "AssistantResponse",
        "ActionRequest",
        "ActionResponse",
        "AssistantResponse",
    ]
    assert list(branch.messages)[1:] == yielded  # system, then exactly what was yielded
    assert kinds(seen) == ["RunStart"] + ["MessageAdded"] * 5 + ["RunEnd"]
    assert added(seen) == yielded
    start, end = seen[0], seen[-1]
    assert isinstance(start, RunStart) and start.operation == "run"
    assert isinstance(end, RunEnd) and end.run_id == start.run_id and not end.stopped
    assert end.result == "Let me look.\n\nIt says hello."
    first = yielded[1]
    assert first.response == "Let me look." and first.metadata["thinking"] == "plan"


async def test_instruction_is_recorded_and_yielded_before_any_chunk_is_consumed():
    model = chunk_model([system(), text("hi")])
    branch = Branch(chat_model=model)
    gen = branch.run("go")
    first = await anext(gen)
    assert isinstance(first, Instruction) and list(branch.messages) == [first]
    assert model.provider.started == 0  # the agent has not been asked anything yet
    rest = await collect(gen)
    assert [m.response for m in rest] == ["hi"] and model.provider.started == 1


async def test_request_carries_prompt_system_schema_options_and_resume_on_second_run():
    model = cli("one", "two")
    branch = Branch(system="Be terse.", chat_model=model)
    await collect(branch.run("first", context=["ctx"], max_turns=3))
    first = model.provider.requests[0]
    assert first.prompt == branch.messages[1].text and "ctx" in first.prompt
    assert first.system == "Be terse." and first.resume is None
    assert first.options == {"max_turns": 3}
    session = model.provider_session_id
    assert session and session.startswith("scripted-")
    await collect(branch.run("second"))
    assert model.provider.requests[1].resume == session


async def test_system_chunk_stores_the_session_id_on_the_model():
    model = chunk_model([system("abc-123"), text("x")], [text("y")])
    branch = Branch(chat_model=model)
    await collect(branch.run("a"))
    assert model.provider_session_id == "abc-123"
    await collect(branch.run("b"))
    assert model.provider.requests[1].resume == "abc-123"


async def test_chat_model_argument_replaces_the_branch_model():
    old, new = cli("old"), cli("new")
    branch = Branch(chat_model=old)
    out = await collect(branch.run("x", chat_model=new))
    assert out[-1].response == "new" and branch.chat_model is new and not old.provider.requests


async def test_non_cli_model_is_rejected_with_the_cli_providers_named_and_no_fallback():
    api = iModel(provider="scripted", replies=["would answer"])
    branch, seen = observed(cli("unused"))
    before = branch.chat_model
    with pytest.raises(ValueError) as info:
        await collect(branch.run("x", chat_model=api))
    for name in ("claude_code", "codex", "gemini_cli", "cli=True"):
        assert name in str(info.value)
    assert branch.chat_model is before  # a rejected model does not replace the branch's
    assert not api.provider.requests and not seen and not len(branch.messages)
    api_branch = Branch(chat_model=api)
    with pytest.raises(ValueError, match="claude_code"):
        await collect(api_branch.run("x"))


async def test_context_injection_slot_is_cleared_even_when_the_stream_fails():
    branch = Branch(chat_model=cli(ServerError("down", provider="scripted")))
    branch.context_providers.append(lambda b, ins: "injected fact")
    with pytest.raises(ServerError):
        await collect(branch.run("x"))
    assert not held_outside_messages(branch, "injected fact")
    assert "injected fact" in branch.messages[0].context


# ----- chunk handling ----------------------------------------------------------------------


async def test_tool_messages_cross_link_flag_errors_and_unmatched_results_are_ignored():
    model = chunk_model(
        [
            system(),
            text("Reading."),
            tool_use("t1", "Read", file_path="a"),
            tool_result("zzz", "stray"),
            tool_result("t1", "contents"),
            tool_use("t2", "Bash", command="false"),
            tool_result("t2", "exit 1", is_error=True),
            tool_result("t2", "duplicate"),
            text("Done."),
            result(
                usage={"input_tokens": 10, "output_tokens": 4},
                total_cost_usd=0.01,
                num_turns=2,
                duration_ms=1234,
            ),
        ]
    )
    branch = Branch(chat_model=model)
    out = await collect(branch.run("go"))
    roles = [m.role for m in out]
    assert roles == [
        "user",
        "assistant",
        "action_request",
        "action_response",
        "action_request",
        "action_response",
        "assistant",
    ]
    req1, res1, req2, res2 = out[2], out[3], out[4], out[5]
    assert isinstance(req1, ActionRequest) and req1.call_id == "t1" and req1.function == "Read"
    assert req1.arguments == {"file_path": "a"}
    assert isinstance(res1, ActionResponse) and res1.action_request_id == req1.id
    assert res1.output == "contents" and not res1.is_error and res1.call_id == "t1"
    assert res2.action_request_id == req2.id and res2.is_error and res2.output == "exit 1"
    final = out[-1]
    assert final.response == "Done."
    assert final.metadata["usage"] == {"input_tokens": 10, "output_tokens": 4}
    assert final.metadata["total_cost_usd"] == 0.01 and final.metadata["num_turns"] == 2
    assert final.metadata["duration_ms"] == 1234 and final.metadata["session_id"] == "sess-1"
    assert "usage" not in out[1].metadata  # result metadata goes on the final response only


async def test_thinking_without_text_before_a_tool_call_is_kept_in_place():
    model = chunk_model(
        [
            Chunk(type="thinking", text="I should "),
            Chunk(type="thinking", text="read it"),
            tool_use("t", "Read"),
            tool_result("t", "x"),
            text("ok"),
        ]
    )
    out = await collect(Branch(chat_model=model).run("go"))
    assert [m.role for m in out] == [
        "user",
        "assistant",
        "action_request",
        "action_response",
        "assistant",
    ]
    assert out[1].response == "" and out[1].metadata["thinking"] == "I should read it"
    assert "thinking" not in out[-1].metadata


async def test_result_without_trailing_text_still_reports_usage_on_a_final_response():
    model = chunk_model(
        [
            tool_use("t", "Read"),
            tool_result("t", "x"),
            result(usage={"input_tokens": 3, "output_tokens": 1}),
        ]
    )
    branch, seen = observed(model)
    out = await collect(branch.run("go"))
    assert out[-1].role == "assistant" and out[-1].response == ""
    assert out[-1].metadata["usage"] == {"input_tokens": 3, "output_tokens": 1}
    assert seen[-1].result is None  # no non-empty text: the collected result is None


async def test_stream_deltas_carry_growing_text_keyed_by_the_recorded_response_id():
    branch, seen = observed(
        cli(
            {
                "chunks": ["Hel", "lo ", "there"],
                "thinking": "hm",
                "tool_calls": [{"name": "Read", "output": "x", "text_after": "Second part"}],
            }
        )
    )
    out = await collect(branch.run("x"))
    first, second = out[1], out[4]
    deltas = [s for s in seen if isinstance(s, StreamDelta)]
    by_id: dict = {}
    for d in deltas:
        by_id.setdefault(d.message_id, []).append(d)
    assert set(by_id) == {first.id, second.id}
    texts = [d for d in by_id[first.id] if d.kind == "text"]
    assert [d.snapshot for d in texts] == ["Hel", "Hello ", "Hello there"]
    assert [d.snapshot for d in by_id[first.id] if d.kind == "thinking"] == ["hm"]
    assert by_id[second.id][-1].snapshot == "Second part"
    # deltas of a response arrive before it is recorded
    order = [
        ("d", s.message_id) if isinstance(s, StreamDelta) else ("m", s.message.id)
        for s in seen
        if isinstance(s, StreamDelta | MessageAdded)
    ]
    assert order.index(("d", first.id)) < order.index(("m", first.id))


# ----- errors ------------------------------------------------------------------------------


async def test_error_chunk_records_partial_text_then_raises_the_classified_error():
    err = AuthenticationError("bad key", provider="claude_code", status=401)
    model = chunk_model(
        [
            system(),
            text("Partial "),
            text("answer"),
            Chunk(type="error", text="bad key", error=err),
            text("never"),
        ]
    )
    branch, seen = observed(model)
    got = []
    with pytest.raises(AuthenticationError) as info:
        async for message in branch.run("x"):
            got.append(message)
    assert info.value is err
    partial = got[-1]
    assert isinstance(partial, AssistantResponse) and partial.response == "Partial answer"
    assert partial.metadata["error"] == str(err) and partial in branch.messages
    assert kinds(seen) == ["RunStart", "MessageAdded", "MessageAdded", "RunFailed"]
    assert isinstance(seen[-1], RunFailed) and seen[-1].error is err
    assert model.provider.closed == 1


async def test_empty_error_becomes_the_literal_empty_error_diagnostic():
    model = chunk_model([Chunk(type="error", text="   ")])
    with pytest.raises(ProviderError) as info:
        await collect(Branch(chat_model=model).run("x"))
    assert "(empty error)" in str(info.value)


async def test_unclassified_error_chunk_is_classified_from_its_text():
    model = chunk_model([Chunk(type="error", text="Rate limit reached, slow down")])
    with pytest.raises(ProviderError) as info:
        await collect(Branch(chat_model=model).run("x"))
    assert type(info.value).__name__ == "RateLimitError"


async def test_benign_end_of_stream_ends_normally_and_stops_reading():
    model = chunk_model(
        [text("All done."), Chunk(type="error", text="", benign_eos=True), text("ignored")]
    )
    branch, seen = observed(model)
    out = await collect(branch.run("x"))
    assert [m.text for m in out[1:]] == ["All done."]
    assert isinstance(seen[-1], RunEnd) and not seen[-1].stopped
    assert not any(isinstance(s, RunFailed) for s in seen)


async def test_scripted_error_reply_flushes_text_then_raises():
    branch = Branch(chat_model=cli({"text": "so far", "error": "overloaded"}))
    with pytest.raises(ServerError):
        await collect(branch.run("x"))
    assert branch.messages[-1].response == "so far"


async def test_unclassified_provider_exception_becomes_an_execution_error():
    model = chunk_model([text("a"), OSError("pipe broke")])
    branch, seen = observed(model)
    with pytest.raises(ExecutionError, match="pipe broke"):
        await collect(branch.run("x"))
    assert (
        branch.messages[-1].response == "a"
        and "pipe broke" in branch.messages[-1].metadata["error"]
    )
    assert isinstance(seen[-1], RunFailed)


# ----- deadline ----------------------------------------------------------------------------


async def test_positive_timeout_is_one_deadline_for_the_whole_stream():
    model = cli({"text": " ".join(f"w{i}" for i in range(50)), "delay": 0.02})
    branch, seen = observed(model)
    started = time.monotonic()
    with pytest.raises(ProviderTimeout, match=r"0\.15 s deadline"):
        await collect(branch.run("x", timeout=0.15))
    assert time.monotonic() - started < 2.0  # 50 chunks x 20 ms would take 1 s
    partial = branch.messages[-1]
    assert partial.role == "assistant" and partial.response.startswith("w0 w1")
    assert "deadline" in partial.metadata["error"]
    assert isinstance(seen[-1], RunFailed) and isinstance(seen[-1].error, ProviderTimeout)


async def test_deadline_counts_time_between_chunks_not_per_chunk():
    # every wait is short, but the stream as a whole outlives the deadline
    model = chunk_model(
        [
            text("a"),
            0.08,
            tool_use("1", "T"),
            0.08,
            tool_use("2", "T"),
            0.08,
            tool_use("3", "T"),
            0.08,
            tool_use("4", "T"),
            text("end"),
        ]
    )
    with pytest.raises(ProviderTimeout):
        await collect(Branch(chat_model=model).run("x", timeout=0.2))
    assert model.provider.closed == 1


async def test_timeout_from_model_request_defaults_and_call_override():
    slow = {"text": "a b c d e f", "delay": 0.05}
    with pytest.raises(ProviderTimeout):
        await collect(Branch(chat_model=cli(slow, timeout=0.1)).run("x"))
    out = await collect(Branch(chat_model=cli(slow, timeout=0.1)).run("x", timeout=None))
    assert out[-1].response == "a b c d e f"  # an explicit None disables the model default


@pytest.mark.parametrize("value", [None, 0, -1, "0.01", True, [1]])
async def test_non_positive_or_non_numeric_timeout_disables_the_deadline(value):
    model = cli({"text": "a b c", "delay": 0.02})
    out = await collect(Branch(chat_model=model).run("x", timeout=value))
    assert out[-1].response == "a b c"
    assert "timeout" not in model.provider.requests[0].options


# ----- cleanup and lifecycle on every exit ---------------------------------------------------


async def test_aclose_before_the_first_item_emits_nothing_and_starts_nothing():
    model = chunk_model([text("x")])
    branch, seen = observed(model)
    gen = branch.run("x")
    await gen.aclose()
    assert seen == [] and len(branch.messages) == 0 and model.provider.started == 0


async def test_break_after_the_first_item_is_a_stopped_run_end():
    model = chunk_model([text("never read")])
    branch, seen = observed(model)
    async with contextlib.aclosing(branch.run("x")) as gen:
        async for _ in gen:
            break
    assert kinds(seen) == ["RunStart", "MessageAdded", "RunEnd"]
    assert seen[-1].stopped and seen[-1].result is None
    assert model.provider.started == 0 and [m.role for m in branch.messages] == ["user"]


async def test_aclose_with_pending_text_records_it_as_a_stopped_response():
    model = chunk_model(
        [
            tool_use("t", "Read"),
            text("half an "),
            text("answer"),
            tool_result("t", "out"),
            text("more"),
        ]
    )
    branch, seen = observed(model)
    gen = branch.run("x")
    async for message in gen:
        if isinstance(message, ActionResponse):
            break
    await gen.aclose()
    last = branch.messages[-1]
    assert last.role == "assistant" and last.response == "half an answer"
    assert last.metadata["stopped"] is True
    assert isinstance(seen[-1], RunEnd) and seen[-1].stopped
    assert seen[-1].result == "half an answer"
    assert sum(isinstance(s, RunEnd | RunFailed) for s in seen) == 1
    assert model.provider.closed == 1


async def test_cancelling_the_consumer_mid_stream_keeps_partial_text_and_closes_the_stream():
    model = cli({"text": " ".join(f"t{i}" for i in range(100)), "delay": 0.01})
    branch, seen = observed(model)
    got_text = asyncio.Event()

    def on_delta(signal):
        if signal.length > 10:
            got_text.set()

    branch.observe(StreamDelta, handler=on_delta)

    async def consume():
        await collect(branch.run("x"))

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_text.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    last = branch.messages[-1]
    assert last.role == "assistant" and last.metadata == {
        "model": "scripted",
        "stopped": True,
        "session_id": model.provider_session_id,
    }
    assert last.response.startswith("t0 t1 t2")
    ends = [s for s in seen if isinstance(s, RunEnd | RunFailed)]
    assert len(ends) == 1 and isinstance(ends[0], RunEnd) and ends[0].stopped
    assert ends[0].result == last.response


async def test_abandoned_generator_is_finalised_as_a_stopped_run():
    model = chunk_model([tool_use("t", "Read"), text("pending"), tool_result("t", "x")])
    branch, seen = observed(model)
    gen = branch.run("x")
    while not isinstance(await anext(gen), ActionResponse):
        pass
    del gen  # never closed by the consumer: the event loop's finaliser closes it
    gc.collect()
    for _ in range(20):
        if any(isinstance(s, RunEnd) for s in seen):
            break
        await asyncio.sleep(0.01)
    ends = [s for s in seen if isinstance(s, RunEnd | RunFailed)]
    assert len(ends) == 1 and ends[0].stopped
    assert model.provider.closed == 1 and branch.messages[-1].metadata.get("stopped") is True


async def test_provider_stream_is_closed_on_normal_end_and_on_failure():
    ok = chunk_model([text("x")])
    await collect(Branch(chat_model=ok).run("x"))
    bad = chunk_model([text("x"), Chunk(type="error", text="boom")])
    with pytest.raises(ProviderError):
        await collect(Branch(chat_model=bad).run("x"))
    assert ok.provider.closed == 1 and bad.provider.closed == 1


async def test_secondary_close_failure_is_logged_and_never_replaces_the_primary(caplog):
    err = ServerError("primary", provider="x")
    model = chunk_model(
        [text("a"), Chunk(type="error", text="primary", error=err)],
        [text("fine"), Chunk(type="error", benign_eos=True), text("unread")],
        fail_on_close=True,
    )
    branch, seen = observed(model)
    with caplog.at_level(logging.WARNING, logger="lion_nb"), pytest.raises(ServerError) as info:
        await collect(branch.run("x"))
    assert info.value is err and isinstance(seen[-1], RunFailed) and seen[-1].error is err
    assert "closing the provider stream failed" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="lion_nb"):
        out = await collect(branch.run("y"))  # a close failure after success is logged only
    assert out[-1].response == "fine" and "closing the fake stream failed" in caplog.text
    assert isinstance(seen[-1], RunEnd) and not seen[-1].stopped


async def test_message_signals_are_drained_before_the_terminal_signal():
    branch = Branch(chat_model=cli("a b"))
    order: list[str] = []

    async def slow_observer(signal):
        await asyncio.sleep(0.02)
        order.append("added")

    branch.observe(MessageAdded, handler=slow_observer)
    branch.observe(RunEnd, handler=lambda s: order.append("end"))
    await collect(branch.run("x"))
    assert order == ["added", "added", "end"]


async def test_run_end_reports_this_runs_usage_only():
    branch, seen = observed(
        cli(
            {
                "text": "a",
                "usage": {"input_tokens": 100, "output_tokens": 5, "total_cost_usd": 0.5},
            },
            {"text": "b", "usage": {"input_tokens": 7, "output_tokens": 2, "total_cost_usd": 0.25}},
        )
    )
    await collect(branch.run("one"))
    await collect(branch.run("two"))
    ends = [s for s in seen if isinstance(s, RunEnd)]
    assert [(e.input_tokens, e.output_tokens, e.total_cost_usd) for e in ends] == [
        (100, 5, 0.5),
        (7, 2, 0.25),
    ]


async def test_nested_in_a_suppressing_context_emits_no_lifecycle_but_still_cleans_up():
    model = chunk_model([text("a"), tool_use("t", "T"), text("b")])
    branch, seen = observed(model)
    outer = RunUsage()
    token = current_run_usage.set(outer)
    try:
        with suppress_lifecycle(branch):
            gen = branch.run("x")
            async for message in gen:
                if isinstance(message, ActionRequest):
                    break
            await gen.aclose()
    finally:
        current_run_usage.reset(token)
    assert kinds(seen) == ["MessageAdded"] * 3  # instruction, "a", request: no lifecycle
    assert model.provider.closed == 1
    usage_model = cli({"text": "u", "usage": {"input_tokens": 9, "output_tokens": 1}})
    branch2 = Branch(chat_model=usage_model)
    token = current_run_usage.set(outer)
    try:
        with suppress_lifecycle(branch2):
            await collect(branch2.run("x"))
    finally:
        current_run_usage.reset(token)
    assert (outer.input_tokens, outer.output_tokens) == (9, 1)  # reported to the outer run


async def test_concurrent_tasks_on_one_branch_are_not_suppressed_by_each_other():
    model = cli(
        {"text": "a b c", "delay": 0.02},
        {"text": "d e f", "delay": 0.02},
        {"text": "g h", "delay": 0.02},
    )
    branch, seen = observed(model)

    async def nested():
        with suppress_lifecycle(branch):  # this task's own context only
            await collect(branch.run("nested"))

    await asyncio.gather(collect(branch.run("one")), collect(branch.run("two")), nested())
    starts = [s for s in seen if isinstance(s, RunStart)]
    ends = [s for s in seen if isinstance(s, RunEnd)]
    assert len(starts) == 2 and len(ends) == 2
    assert {s.run_id for s in starts} == {e.run_id for e in ends}
    assert len(branch.messages) == 6  # every exchange recorded, nested included


async def test_consumer_code_between_items_is_not_inside_the_runs_suppression():
    branch, seen = observed(cli("streamed", default_reply="x"))
    branch.chat_model  # noqa: B018 - resolve the model once
    inner_runs = []
    async for message in branch.run("x"):
        if isinstance(message, Instruction):
            other = Branch(chat_model=cli("inner"))
            other.observe(RunStart, handler=inner_runs.append)
            await collect(other.run("y"))
    assert len(inner_runs) == 1
    assert kinds(seen).count("RunStart") == 1 and kinds(seen).count("RunEnd") == 1


async def test_a_run_replayed_from_a_cassette_marks_its_responses(tmp_path):
    import lion_nb

    path = tmp_path / "c.cassette.jsonl"
    with lion_nb.cassette(path, mode="record"):
        await collect(Branch(chat_model=cli("recorded run")).run("go"))
    with lion_nb.cassette(path, mode="replay"):
        branch = Branch(chat_model=cli())
        out = await collect(branch.run("go"))
    assert out[-1].response == "recorded run"
    assert out[-1].metadata["replayed"]["call"] == 1
    assert "replayed" not in out[0].metadata  # the instruction is the user's, never replayed
