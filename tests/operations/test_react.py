"""ReAct / ReActStream: rounds, extension budget, round signals, one lifecycle pair per run on API
and CLI models, nested verbs silent, and an end-to-end run over real HTTP with native tool calls."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from lion_nb import Branch, Session, iModel
from lion_nb.errors import ServerError
from lion_nb.operations.react import ReActStream, clamp_extensions, needs_extension
from lion_nb.operations.react_models import Analysis, ReActAnalysis
from lion_nb.signals import RoundEnd, RoundStart, RunEnd, RunFailed, RunStart
from tests.servers.chat_server import Reply, start_chat_server
from tests.support.scripted import kinds, scripted


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    await asyncio.sleep(0)
    return a * b


def analysis(text: str, more: bool, *calls: tuple[str, dict]) -> dict:
    reply: dict = {"analysis": text, "extension_needed": more}
    if calls:
        reply["action_requests"] = [{"function": f, "arguments": a} for f, a in calls]
    return {"json": reply}


def answer(text: str) -> dict:
    return {"json": {"answer": text}}


SCRIPT = [
    analysis("need the sum", True, ("add", {"a": 2, "b": 3})),
    analysis("now the product", False, ("mul", {"a": 5, "b": 4})),
    answer("5 then 20"),
]


def observed(branch: Branch) -> list:
    seen: list = []
    branch.observe(handler=seen.append)
    return seen


def lifecycle(seen: list) -> list:
    return [s for s in seen if isinstance(s, RunStart | RunEnd | RunFailed)]


def rounds(seen: list) -> list[tuple]:
    return [
        (type(s).__name__, s.round, s.final, getattr(s, "extension_needed", None))
        for s in seen
        if isinstance(s, RoundStart | RoundEnd)
    ]


@pytest.mark.parametrize("cli", [False, True], ids=["api", "cli"])
async def test_scripted_react_end_to_end_with_one_lifecycle_pair(cli):
    model = scripted(*SCRIPT, cli=cli)
    branch = Branch(chat_model=model, tools=[add, mul])
    seen = observed(branch)
    assert await branch.ReAct("compute", max_extensions=2) == "5 then 20"
    assert [m.role for m in branch.messages] == [
        "user", "assistant", "action_request", "action_response",
        "user", "assistant", "action_request", "action_response",
        "user", "assistant",
    ]  # fmt: skip
    outputs = [m.output for m in branch.messages if m.role == "action_response"]
    assert outputs == [5, 20]
    start, end = lifecycle(seen)  # nested operate/communicate/run stay silent
    assert start.operation == end.operation == "ReAct" and end.result == "5 then 20"
    assert rounds(seen) == [
        ("RoundStart", 1, False, None), ("RoundEnd", 1, False, True),
        ("RoundStart", 2, False, None), ("RoundEnd", 2, False, False),
        ("RoundStart", 3, True, None), ("RoundEnd", 3, True, None),
    ]  # fmt: skip
    assert {s.run_id for s in seen if isinstance(s, RoundStart | RoundEnd)} == {start.run_id}


async def test_round_one_is_offered_the_branch_tools():
    model = scripted(analysis("a", False), answer("x"))
    branch = Branch(chat_model=model, tools=[add])
    await branch.ReAct("q")
    first, final = model.provider.requests
    assert [t["function"]["name"] for t in first.tools] == ["add"]
    assert "action_requests" in first.response_schema["properties"]
    assert final.tools is None and final.response_schema["title"] == "Analysis"

    bare = scripted(analysis("a", False), answer("x"))
    await Branch(chat_model=bare).ReAct("q")
    assert "action_requests" not in bare.provider.requests[0].response_schema["properties"]


@pytest.mark.parametrize("budget", [None, 0, -2])
async def test_no_extension_rounds_without_budget(budget):
    model = scripted(analysis("more please", True), answer("done"))
    branch = Branch(chat_model=model)
    seen = observed(branch)
    assert await branch.ReAct("q", max_extensions=budget) == "done"
    assert [r[1] for r in rounds(seen) if r[0] == "RoundStart"] == [1, 2]
    assert "rounds" not in model.provider.requests[0].messages[-1]["content"]


async def test_extensions_stop_at_the_budget_or_when_not_allowed():
    model = scripted(*[analysis(f"r{i}", True) for i in range(3)], answer("ok"))
    branch = Branch(chat_model=model)
    out = await branch.ReAct("q", max_extensions=2, return_analysis=True)
    assert [type(o).__name__ for o in out] == ["ReActAnalysis"] * 3 + ["Analysis"]
    assert [o.analysis for o in out[:3]] == ["r0", "r1", "r2"] and out[-1].answer == "ok"

    model = scripted(analysis("r", True), answer("ok"))
    assert await Branch(chat_model=model).ReAct("q", extension_allowed=False) == "ok"


async def test_max_extensions_above_100_warns_and_clamps():
    with pytest.warns(UserWarning, match="clamped to 100"):
        assert clamp_extensions(250) == 100
    model = scripted(analysis("r", False), answer("ok"))
    with pytest.warns(UserWarning, match="max_extensions=101"):
        await Branch(chat_model=model).ReAct("q", max_extensions=101)
    assert "up to 100 more" in model.provider.requests[0].messages[-1]["content"]


async def test_response_format_makes_the_final_object_the_result():
    class Report(BaseModel):
        total: int

    model = scripted(analysis("a", False), {"json": {"total": 25}})
    out = await Branch(chat_model=model).ReAct("q", response_format=Report)
    assert out == Report(total=25)


async def test_an_unparseable_final_reply_is_returned_as_text():
    model = scripted(analysis("a", False), "just words")
    assert await Branch(chat_model=model).ReAct("q", num_parse_retries=0) == "just words"


@pytest.mark.parametrize("cli", [False, True], ids=["api", "cli"])
async def test_react_stream_yields_rounds_under_one_pair(cli):
    branch = Branch(chat_model=scripted(*SCRIPT, cli=cli), tools=[add, mul])
    seen = observed(branch)
    items = [item async for item in branch.ReActStream("compute", max_extensions=2)]
    assert [type(i).__name__ for i in items] == ["ReActAnalysis", "ReActAnalysis", "Analysis"]
    assert isinstance(items[0], ReActAnalysis) and items[0].action_responses[0].output == 5
    assert items[-1] == Analysis(answer="5 then 20")
    start, end = lifecycle(seen)
    assert start.operation == "ReActStream" and isinstance(end, RunEnd) and not end.stopped
    assert end.result == items[-1]
    assert end.input_tokens and end.input_tokens > 0  # the rounds' usage is this run's


async def test_stopping_a_stream_early_is_one_stopped_run_end():
    branch = Branch(chat_model=scripted(*SCRIPT), tools=[add, mul])
    seen = observed(branch)
    stream = branch.ReActStream("compute")
    async for _ in stream:
        break
    await stream.aclose()
    start, end = lifecycle(seen)
    assert isinstance(end, RunEnd) and end.stopped and end.run_id == start.run_id
    assert rounds(seen)[-1] == ("RoundEnd", 1, False, True)  # round 2 never started


async def test_the_consumer_between_rounds_is_not_part_of_the_run():
    branch = Branch(chat_model=scripted(*SCRIPT[:1], "side answer", *SCRIPT[1:]), tools=[add, mul])
    seen = observed(branch)
    async for item in branch.ReActStream("compute", max_extensions=2):
        if isinstance(item, ReActAnalysis) and item.analysis == "need the sum":
            assert await branch.communicate("side question") == "side answer"
    starts = [s.operation for s in seen if isinstance(s, RunStart)]
    assert starts == ["ReActStream", "communicate"]
    assert [s.operation for s in seen if isinstance(s, RunEnd)] == ["communicate", "ReActStream"]


async def test_operations_level_stream_is_silent_and_defaults_to_no_extensions():
    model = scripted(analysis("more", True), answer("fin"))
    branch = Branch(chat_model=model)
    seen = observed(branch)
    items = [i async for i in ReActStream(branch, "q")]
    assert [type(i).__name__ for i in items] == ["ReActAnalysis", "Analysis"]
    assert lifecycle(seen) == []


async def test_facade_stream_defaults_to_three_extensions():
    model = scripted(*[analysis(f"r{i}", True) for i in range(4)], answer("fin"))
    items = [i async for i in Branch(chat_model=model).ReActStream("q")]
    assert len(items) == 5


async def test_a_failing_round_is_one_run_failed():
    model = scripted(analysis("a", True), ServerError("overloaded", provider="scripted"))
    branch = Branch(chat_model=model)
    seen = observed(branch)
    with pytest.raises(ServerError):
        await branch.ReAct("q")
    start, failed = lifecycle(seen)
    assert isinstance(failed, RunFailed) and failed.run_id == start.run_id
    last = [s for s in seen if isinstance(s, RoundEnd)][-1]
    assert last.round == 2 and isinstance(last.error, ServerError)


@pytest.mark.parametrize("cli", [False, True], ids=["api", "cli"])
async def test_a_failing_stream_is_one_run_failed(cli):
    failure = {"text": "partial", "error": "overloaded"}  # a ServerError after some text
    branch = Branch(chat_model=scripted(analysis("a", True), failure, cli=cli))
    seen = observed(branch)
    got: list = []
    with pytest.raises(ServerError, match="overloaded"):
        async for item in branch.ReActStream("q"):
            got.append(item)
    assert len(got) == 1
    start, failed = lifecycle(seen)  # the nested run() of the CLI path stayed silent
    assert start.operation == "ReActStream" and isinstance(failed, RunFailed)
    assert isinstance(failed.error, ServerError)


async def test_nested_verbs_inside_tools_stay_silent():
    branch = Branch()

    async def ask_helper(question: str) -> str:
        """Ask the same conversation a side question."""
        return await branch.communicate(question)  # a verb with a lifecycle of its own

    branch.chat_model = scripted(
        analysis("ask", False, ("ask_helper", {"question": "hint?"})), "a hint", answer("done")
    )
    branch.register_tools(ask_helper)
    seen = observed(branch)
    assert await branch.ReAct("q") == "done"
    assert [s.operation for s in lifecycle(seen)] == ["ReAct", "ReAct"]
    assert "a hint" in [m.text for m in branch.messages]  # it did run, silently


def by_request(request) -> dict:
    """Replies chosen by what is asked, so interleaved tasks get the right ones."""
    schema = request.response_schema or {}
    if schema.get("title") == "ReActAnalysis":
        return analysis("thinking", False)
    if schema.get("title") == "Analysis":
        return answer("final")
    return {"text": "plain"}


async def test_concurrent_tasks_on_the_same_branch_are_not_suppressed():
    model = iModel(provider="scripted", default_reply=by_request, delay=0.002)
    branch = Branch(chat_model=model)
    seen = observed(branch)
    react, plain = await asyncio.gather(branch.ReAct("q"), branch.communicate("hello"))
    assert (react, plain) == ("final", "plain")
    ops = sorted(s.operation for s in seen if isinstance(s, RunStart))
    assert ops == ["ReAct", "communicate"]
    react_id = next(s.run_id for s in seen if isinstance(s, RunStart) and s.operation == "ReAct")
    assert {s.run_id for s in seen if isinstance(s, RoundStart)} == {react_id}
    assert len([s for s in seen if isinstance(s, RunEnd)]) == 2


async def test_interpret_rewrites_the_instruction_first():
    model = scripted("Compute 2+3 precisely.", analysis("a", False), answer("5"))
    branch = Branch(chat_model=model)
    assert await branch.ReAct("2+3?", interpret=True, interpret_domain="math") == "5"
    assert "Interpreted instruction: Compute 2+3 precisely." in branch.messages[0].text
    assert len(branch.messages) == 4  # the interpret turn is unrecorded


async def test_session_runs_the_stream_as_one_operation():
    session = Session()
    branch = session.new_branch(chat_model=scripted(analysis("a", False), answer("x")))
    seen: list = []
    session.observe(handler=seen.append)
    items = await session.run_operation("ReActStream", branch=branch, instruction="q")
    assert [type(i).__name__ for i in items] == ["ReActAnalysis", "Analysis"]
    assert [type(s).__name__ for s in lifecycle(seen)] == ["RunStart", "RunEnd"]


def test_needs_extension_rules():
    assert needs_extension(ReActAnalysis(extension_needed=True))
    assert not needs_extension(ReActAnalysis.model_validate({"extension_needed": False}))
    assert not needs_extension("text") and not needs_extension(None)
    assert needs_extension({"extension_needed": True})
    # a native tool call the model has not seen the result of asks for another round
    assert needs_extension({"action_responses": [{"call_id": "c1"}]})
    assert not needs_extension({"action_responses": [{"call_id": None}]})


# ----- end to end over HTTP --------------------------------------------------------------
async def test_react_over_http_with_two_real_tools_in_the_wire_format():
    with start_chat_server() as server:
        server.script(
            Reply(
                tool_calls=[
                    {"name": "add", "arguments": {"a": 2, "b": 3}, "id": "call_add"},
                    {"name": "mul", "arguments": {"a": 4, "b": 5}, "id": "call_mul"},
                ]
            ),
            Reply(json.dumps({"analysis": "5 and 20", "extension_needed": False})),
            Reply(json.dumps({"answer": "The sum is 5 and the product is 20."})),
        )
        model = iModel(
            provider="openai", model="test-model", base_url=server.base_url, api_key="sk-test"
        )
        branch = Branch(system="Use the tools.", chat_model=model, tools=[add, mul])
        seen = observed(branch)
        result = await branch.ReAct("What are 2+3 and 4*5?", max_extensions=2)
        wire = [r.body for r in server.requests]

    assert result == "The sum is 5 and the product is 20."
    msgs = list(branch.messages)
    assert [m.role for m in msgs] == [
        "system", "user", "assistant", "action_request", "action_request",
        "action_response", "action_response", "user", "assistant", "user", "assistant",
    ]  # fmt: skip
    assert msgs[2].response == "" and [c["id"] for c in msgs[2].metadata["tool_calls"]] == [
        "call_add",
        "call_mul",
    ]
    assert [(m.function, m.call_id) for m in msgs[3:5]] == [
        ("add", "call_add"),
        ("mul", "call_mul"),
    ]
    results = {m.call_id: m for m in msgs[5:7]}
    assert results["call_add"].output == 5 and results["call_mul"].output == 20
    for req in msgs[3:5]:
        assert results[req.call_id].id == req.action_response_id
        assert results[req.call_id].action_request_id == req.id

    # round 1 offered both tools natively; the native-only reply asked for round 2
    assert [t["function"]["name"] for t in wire[0]["tools"]] == ["add", "mul"]
    assert wire[0]["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]
    sent = wire[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in sent[2]["tool_calls"]
    ] == [("call_add", "add", {"a": 2, "b": 3}), ("call_mul", "mul", {"a": 4, "b": 5})]
    assert {(m["tool_call_id"], m["content"]) for m in sent[3:5]} == {
        ("call_add", "5"),
        ("call_mul", "20"),
    }
    assert "tools" not in wire[2]  # the answer turn is not offered tools
    assert wire[2]["response_format"]["json_schema"]["name"] == "Analysis"

    def label(s) -> str:
        name = type(s).__name__
        if isinstance(s, RoundStart | RoundEnd):
            return f"{name}:{s.round}{':final' if s.final else ''}"
        if name == "MessageAdded":
            return f"+{s.message.role}"
        return name

    assert [label(s) for s in seen if type(s).__name__ != "StreamDelta"] == [
        "RunStart",
        "RoundStart:1", "CallStart", "+user", "+assistant", "CallEnd",
        "+action_request", "+action_request", "+action_response", "+action_response",
        "RoundEnd:1",
        "RoundStart:2", "CallStart", "+user", "+assistant", "CallEnd", "ParseAttempt",
        "RoundEnd:2",
        "RoundStart:3:final", "CallStart", "+user", "+assistant", "CallEnd", "ParseAttempt",
        "RoundEnd:3:final",
        "RunEnd",
    ]  # fmt: skip
    round_ends = [s for s in seen if isinstance(s, RoundEnd)]
    assert [s.extension_needed for s in round_ends] == [True, False, None]
    deltas = [s for s in seen if type(s).__name__ == "StreamDelta"]
    assert {d.kind for d in deltas} >= {"tool_args", "text"}  # live while it streamed
    assert kinds(seen).count("RunStart") == 1
