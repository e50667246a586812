import asyncio
import contextvars

from lion_nb import Branch
from lion_nb.port.lifecycle import lifecycle_suppressed, suppress_lifecycle
from lion_nb.signals import MessageAdded, RunEnd
from tests.support.scripted import RECORDED_EXCHANGE, kinds, scripted


async def test_nested_wrapper_on_the_same_branch_is_silent():
    branch = Branch(chat_model=scripted("inner", "outer"))
    seen: list = []
    branch.observe(handler=seen.append)

    async def outer():
        await branch.communicate("nested")  # inside the outer run: no own lifecycle
        return await branch.chat("last")

    assert await branch._observed_run("composite", outer()) == "outer"
    assert kinds(seen) == [
        "RunStart",
        *RECORDED_EXCHANGE,  # communicate
        *("CallStart", "CallEnd"),  # chat: unrecorded
        "RunEnd",
    ]
    assert seen[0].operation == "composite"


async def test_suppression_is_task_scoped():
    branch = Branch(chat_model=scripted("a", "b", delay=0.01))
    seen: list = []
    branch.observe(handler=seen.append)
    with suppress_lifecycle(branch):
        assert lifecycle_suppressed(branch)
        await branch.communicate("silent")
        # a task started from a fresh context is not suppressed
        loop = asyncio.get_running_loop()
        task = loop.create_task(branch.communicate("loud"), context=contextvars.Context())
        await task
    assert not lifecycle_suppressed(branch)
    assert kinds(seen).count("RunStart") == 1


async def test_other_branches_are_not_suppressed():
    a = Branch(chat_model=scripted("a"))
    b = Branch(chat_model=scripted("b"))
    seen_b: list = []
    b.observe(handler=seen_b.append)

    async def composite():
        return await b.communicate("x")

    await a._observed_run("outer", composite())
    assert kinds(seen_b) == ["RunStart", *RECORDED_EXCHANGE, "RunEnd"]


async def test_async_message_observers_are_drained_before_run_end():
    branch = Branch(chat_model=scripted("x"))
    order: list[str] = []

    async def slow_observer(signal):
        await asyncio.sleep(0.02)
        order.append(f"observed {type(signal).__name__}")

    branch.observe(MessageAdded, handler=slow_observer)
    branch.observe(RunEnd, handler=lambda s: order.append("RunEnd"))
    await branch.communicate("hi")
    assert order == ["observed MessageAdded", "observed MessageAdded", "RunEnd"]
