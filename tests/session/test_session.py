import asyncio

import pytest

from lion_nb import Branch, Operation, Session
from lion_nb.errors import OperationError
from lion_nb.flow.node import Status
from lion_nb.session.manager import OperationManager
from tests.support.scripted import scripted


async def summarise(branch, text: str, prefix: str = "") -> str:
    return prefix + f"{branch.name}:{len(text)}"


def test_registry_rejects_duplicates_and_sync_functions():
    manager = OperationManager()
    manager.register("summarise", summarise)
    with pytest.raises(ValueError, match="'summarise' is already registered"):
        manager.register("summarise", summarise)
    manager.register("summarise", summarise, update=True)
    with pytest.raises(ValueError, match="'sync_op' must be an async function"):
        manager.register("sync_op", lambda branch: 1)


def test_include_branches_shares_the_exact_manager_and_sets_default():
    session = Session()
    a, b = Branch(name="a"), Branch(name="b")
    private = a._operation_manager
    session.include_branches(a, b)
    assert a._operation_manager is session._operation_manager is b._operation_manager
    assert a._operation_manager is not private
    assert session.default_branch is a and a.session is session


async def test_registration_is_seen_by_every_branch_and_decorator_uses_name():
    session = Session()
    a = session.new_branch(name="a")
    b = session.new_branch(name="b")

    @session.operation()
    async def shout(branch, word: str) -> str:
        return f"{branch.name}:{word.upper()}"

    assert a.get_operation("shout") is shout and b.get_operation("shout") is shout
    assert await session.run_operation("shout", word="hi") == "a:HI"
    assert await session.run_operation("shout", branch="b", word="x") == "b:X"
    assert await session.run_operation("shout", branch=b.id, word="y") == "b:Y"
    assert await session.run_operation("shout", branch=str(b.id), word="z") == "b:Z"
    assert await session.run_operation("shout", branch=b, word="w") == "b:W"


async def test_builtins_win_over_registered_names_even_with_update():
    session = Session()
    branch = session.new_branch(chat_model=scripted("real chat"))

    async def fake_chat(branch, **kw):
        return "shadowed"

    session.register_operation("chat", fake_chat)
    session.register_operation("chat", fake_chat, update=True)
    assert branch.get_operation("chat") == branch.chat
    assert await session.run_operation("chat", instruction="hi") == "real chat"


async def test_unknown_operation_and_unknown_branch():
    session = Session()
    session.new_branch(name="main")
    with pytest.raises(ValueError, match="Unknown operation: nope"):
        await session.run_operation("nope")
    with pytest.raises(ValueError, match="no branch named"):
        await session.run_operation("chat", branch="ghost")


async def test_operation_node_uses_the_same_lookup():
    session = Session()
    branch = session.new_branch(name="n", chat_model=scripted("node reply"))
    session.register_operation("summarise", summarise)
    node = Operation("summarise", {"text": "abcd", "prefix": ">"})
    assert await node.invoke(branch) == ">n:4" and node.status is Status.COMPLETED
    chat_node = Operation("communicate", {"instruction": "hi"})
    assert await chat_node.invoke(branch) == "node reply"
    assert len(branch.messages) == 2
    missing = Operation("teleport")
    assert await missing.invoke(branch) is None
    assert missing.status is Status.FAILED and isinstance(missing.error, OperationError)
    assert str(missing.error) == "Unsupported operation type: teleport"
    with pytest.raises(OperationError, match="Unsupported operation type: teleport"):
        await missing.execute(branch)


async def test_streaming_builtin_is_drained_into_a_list_by_the_node():
    session = Session()
    branch = session.new_branch(chat_model=scripted("streamed reply", cli=True))
    node = Operation("run", {"instruction": "go"})
    result = await node.invoke(branch)
    assert node.status is Status.COMPLETED, node.error
    assert [m.role for m in result] == ["user", "assistant"]


async def test_session_observers_see_included_branches():
    session = Session()
    seen = []
    session.observe(handler=lambda s: seen.append((s.branch_id, type(s).__name__)))
    a = session.new_branch(chat_model=scripted("x"))
    await a.communicate("hi")
    assert (a.id, "RunEnd") in seen


async def test_standalone_branch_is_observable_before_any_session():
    branch = Branch(chat_model=scripted("x"))
    got = []

    @branch.observe()
    def everything(signal):
        got.append(signal)

    await branch.chat_and_record("hi")
    assert len(got) >= 2


async def test_concurrent_runs_on_the_same_branch_each_get_a_lifecycle():
    branch = Branch(chat_model=scripted(*(["r"] * 4), delay=0.01))
    starts = []
    branch.observe(handler=lambda s: starts.append(s) if type(s).__name__ == "RunStart" else None)
    await asyncio.gather(*(branch.communicate(f"q{i}") for i in range(4)))
    assert len(starts) == 4


def test_get_operation_resolves_verbs_first_then_the_registry():
    session = Session()

    async def summarise(branch, **kw):
        return "short"

    session.register_operation("summarise", summarise)
    assert session.get_operation("communicate") is Branch.communicate
    assert session.get_operation("summarise") is summarise
    assert session.get_operation("teleport") is None
    session.register_operation("operate", summarise)  # a name can never shadow a verb (D2)
    assert session.get_operation("operate") is Branch.operate
