"""act: requested tool calls are executed and recorded (request, then its cross-linked
response); failures become error responses or raise; no lifecycle of its own."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from lion_nb import Branch
from lion_nb.compile import compile_messages
from lion_nb.messages import MESSAGE_LIST, ActionRequest, ActionResponse
from lion_nb.models.base import ToolCall
from lion_nb.operations.act import act
from lion_nb.operations.fields import ActionResponseModel
from tests.support.scripted import kinds, scripted


def add(a: int, b: int) -> int:
    """Add."""
    return a + b


def boom(reason: str) -> None:
    raise RuntimeError(f"exploded: {reason}")


def branch_with(*tools, seen: list | None = None) -> Branch:
    branch = Branch(chat_model=scripted(), tools=list(tools))
    if seen is not None:
        branch.observe(handler=seen.append)
    return branch


def pairs(branch: Branch) -> list[tuple[ActionRequest, ActionResponse]]:
    reqs = {m.id: m for m in branch.messages if isinstance(m, ActionRequest)}
    return [
        (reqs[m.action_request_id], m) for m in branch.messages if isinstance(m, ActionResponse)
    ]


async def test_dict_request_is_recorded_then_answered_cross_linked_without_lifecycle():
    seen: list = []
    branch = branch_with(add, seen=seen)
    out = await branch.act({"function": "add", "arguments": {"a": 2, "b": 3}})
    assert out == [ActionResponseModel(function="add", arguments={"a": 2, "b": 3}, output=5)]
    req, res = list(branch.messages)
    assert isinstance(req, ActionRequest) and isinstance(res, ActionResponse)
    assert req.action_response_id == res.id and res.action_request_id == req.id
    assert (res.function, res.arguments, res.output, res.is_error) == (
        "add",
        {"a": 2, "b": 3},
        5,
        False,
    )
    assert res.metadata["source"] == "act" and res.metadata["duration_ms"] >= 0
    assert kinds(seen) == ["MessageAdded", "MessageAdded"]  # no RunStart/RunEnd


class Call(BaseModel):
    function: str
    arguments: dict


async def test_every_accepted_request_shape():
    branch = branch_with(add)
    requests = [
        {"function": "add", "arguments": {"a": 1, "b": 1}},
        {"name": "add", "arguments": '{"a": 1, "b": 2}', "id": "c2"},
        {"id": "c3", "type": "function", "function": {"name": "add", "arguments": '{"a":1,"b":3}'}},
        ActionRequest(function="add", arguments={"a": 1, "b": 4}, call_id="c4"),
        Call(function="add", arguments={"a": 1, "b": 5}),
        ToolCall(id="c6", name="add", arguments={"a": 1, "b": 6}),
    ]
    out = await act(branch, requests)
    assert [r.output for r in out] == [2, 3, 4, 5, 6, 7]
    assert [r.call_id for r in out] == [None, "c2", "c3", "c4", None, "c6"]
    assert len(pairs(branch)) == 6
    for req, res in pairs(branch):
        assert req.action_response_id == res.id and res.call_id == req.call_id


@pytest.mark.parametrize(
    "bad, error",
    [
        (42, TypeError),
        ({"arguments": {}}, ValueError),
        ({"function": "add", "arguments": "{not json"}, ValueError),
        ({"function": "add", "arguments": [1, 2]}, ValueError),
    ],
)
async def test_malformed_requests_raise_clear_errors_and_record_nothing(bad, error):
    branch = branch_with(add)
    with pytest.raises(error):
        await act(branch, [{"function": "add", "arguments": {"a": 1, "b": 1}}, bad])
    assert len(branch.messages) == 0


async def test_invalid_strategy():
    with pytest.raises(ValueError, match="strategy"):
        await act(branch_with(add), {"function": "add"}, strategy="parallel")  # type: ignore[arg-type]


async def test_unknown_tool_and_bad_arguments_become_error_responses_when_suppressed():
    branch = branch_with(add)
    out = await act(
        branch, [{"function": "nope", "arguments": {}}, {"function": "add", "arguments": {"a": 1}}]
    )
    assert [r.is_error for r in out] == [True, True]
    assert "unknown tool 'nope' (available: add)" in out[0].output
    assert "invalid arguments for tool 'add'" in out[1].output and "b" in out[1].output
    assert [(req.function, res.is_error) for req, res in pairs(branch)] == [
        ("nope", True),
        ("add", True),
    ]


async def test_unknown_tool_raises_before_anything_runs_when_not_suppressed():
    ran: list[int] = []

    def record(x: int) -> int:
        ran.append(x)
        return x

    branch = branch_with(record)
    with pytest.raises(ValueError, match="unknown tool 'nope'"):
        await act(
            branch,
            [{"function": "record", "arguments": {"x": 1}}, {"function": "nope"}],
            suppress_errors=False,
        )
    assert ran == [] and len(branch.messages) == 0


async def test_raising_tool_is_an_error_response_or_is_reraised_after_recording():
    branch = branch_with(add, boom)
    out = await act(branch, {"function": "boom", "arguments": {"reason": "x"}})
    assert out[0].is_error and out[0].output == "RuntimeError: exploded: x"

    branch = branch_with(add, boom)
    with pytest.raises(RuntimeError, match="exploded: y"):
        await act(
            branch,
            [
                {"function": "boom", "arguments": {"reason": "y"}},
                {"function": "add", "arguments": {"a": 1, "b": 1}},
            ],
            suppress_errors=False,
        )
    # the concurrent batch finished: both calls are recorded with their outcomes
    assert [(req.function, res.is_error, res.output) for req, res in pairs(branch)] == [
        ("boom", True, "RuntimeError: exploded: y"),
        ("add", False, 2),
    ]


async def test_concurrent_records_all_requests_first_and_runs_calls_together():
    gate = asyncio.Event()

    async def first() -> str:
        await asyncio.wait_for(gate.wait(), 2)  # only returns if `second` runs meanwhile
        return "first"

    async def second() -> str:
        gate.set()
        return "second"

    branch = branch_with(first, second)
    out = await act(branch, [{"function": "first"}, {"function": "second"}])
    assert [r.output for r in out] == ["first", "second"]  # returned in request order
    roles = [m.role for m in branch.messages]
    assert roles == ["action_request", "action_request", "action_response", "action_response"]
    # responses are recorded as calls return: `second` finished first
    assert [m.function for m in branch.messages][2:] == ["second", "first"]


async def test_sequential_runs_one_at_a_time_and_stops_at_a_raised_failure():
    running: list[int] = []
    peak = 0

    async def step(n: int) -> int:
        nonlocal peak
        running.append(n)
        peak = max(peak, len(running))
        await asyncio.sleep(0.01)
        running.remove(n)
        return n

    branch = branch_with(step, boom)
    out = await act(
        branch,
        [{"function": "step", "arguments": {"n": i}} for i in range(3)],
        strategy="sequential",
    )
    assert [r.output for r in out] == [0, 1, 2] and peak == 1
    assert [m.role for m in branch.messages] == ["action_request", "action_response"] * 3

    branch = branch_with(step, boom)
    with pytest.raises(RuntimeError):
        await act(
            branch,
            [
                {"function": "boom", "arguments": {"reason": "z"}},
                {"function": "step", "arguments": {"n": 9}},
            ],
            strategy="sequential",
            suppress_errors=False,
        )
    # no request is left without its response; the call after the failure never started
    assert [(m.role, m.function) for m in branch.messages] == [
        ("action_request", "boom"),
        ("action_response", "boom"),
    ]


async def test_an_already_recorded_request_is_answered_not_recorded_again():
    branch = branch_with(add)
    linked = ActionRequest(
        function="add",
        arguments={"a": 1, "b": 1},
        action_response_id=ActionRequest(function="x").id,
    )
    unlinked = ActionRequest(function="add", arguments={"a": 2, "b": 2})
    branch.add_message(linked)
    branch.add_message(unlinked)
    await act(branch, [linked, unlinked])
    msgs = list(branch.messages)
    assert [m.role for m in msgs] == ["action_request"] * 2 + ["action_response"] * 2
    assert msgs[2].id == linked.action_response_id  # the pre-announced id is used
    assert msgs[3].action_request_id == unlinked.id  # links back even without a forward link


async def test_action_timeout_is_an_error_response():
    async def slow() -> str:
        await asyncio.sleep(5)
        return "late"

    branch = branch_with(slow)
    out = await act(branch, {"function": "slow"}, action_timeout=0.05)
    assert out[0].is_error and "did not return within 0.05 s" in out[0].output


async def test_cancelled_batch_answers_open_calls_so_the_history_stays_valid():
    started = asyncio.Event()

    async def hang() -> None:
        started.set()
        await asyncio.sleep(10)

    async def quick() -> int:
        return 2

    branch = branch_with(hang, quick)
    task = asyncio.ensure_future(act(branch, [{"function": "quick"}, {"function": "hang"}]))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    answered = {req.function: res for req, res in pairs(branch)}
    assert answered["quick"].output == 2 and not answered["quick"].is_error
    assert answered["hang"].is_error and "cancelled" in answered["hang"].output
    wire = compile_messages(branch.messages)
    assert [m["role"] for m in wire] == ["assistant", "tool", "tool"]


async def test_outputs_stay_json_in_the_history_and_raw_for_the_caller():
    class Thing:
        def __repr__(self) -> str:
            return "<Thing>"

    class Out(BaseModel):
        n: int

    def make() -> dict:
        return {"thing": Thing(), "model": Out(n=1), "items": {3}}

    branch = branch_with(make)
    out = await act(branch, {"function": "make"})
    assert isinstance(out[0].output["thing"], Thing)  # the caller gets the real objects
    stored = branch.messages[1].output
    assert stored == {"thing": "<Thing>", "model": {"n": 1}, "items": [3]}
    assert MESSAGE_LIST.validate_json(MESSAGE_LIST.dump_json(list(branch.messages)))
