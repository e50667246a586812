"""The chat view with a cassette in force: it says so ("replaying from …" / "recording to …" /
"cannot record: …", following ``use_cassette`` / ``%lion_cassette`` at once),
a prompt typed in "auto" mode never changes the shipped cassette, and a prompt that is not on
the cassette is one short message in the error box, also where the model is not installed."""

from __future__ import annotations

from pathlib import Path

import pytest

import lion_nb
from lion_nb import Branch, BranchView, iModel
from lion_nb.cassettes import CassetteWarning
from lion_nb.cassettes import active as cassettes
from lion_nb.errors import CassetteMiss

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "notebooks" / "data" / "07_cassettes.cassette.jsonl"
SYSTEM = "You are a helpful assistant. Answer in one or two sentences."  # notebook 07's


@pytest.fixture(autouse=True)
def _no_default_cassette():
    previous = cassettes.set_default(None)
    yield
    cassettes.set_default(previous)


@pytest.fixture
def shipped(tmp_path: Path) -> Path:
    """A copy of notebook 07's shipped cassette, as the notebook sees it."""
    path = tmp_path / "data" / "07_cassettes.cassette.jsonl"
    path.parent.mkdir()
    path.write_bytes(SHIPPED.read_bytes())
    return path


def contents(path: Path) -> bytes:
    return path.read_bytes()


def uninstalled(tmp_path: Path) -> iModel:
    """Notebook 07's embedded model on a machine where it is not installed (its weights are
    missing; the requests it makes are the ones recorded)."""
    return iModel(
        provider="local",
        temperature=0,
        seed=0,
        max_tokens=64,
        model_path=tmp_path / "not-installed.gguf",
    )


def test_without_a_cassette_the_status_line_has_no_mark() -> None:
    view = BranchView(Branch(chat_model=iModel(provider="scripted")))
    assert "lion-cassette-badge" not in view.status.value + view.cassette_badge.value


async def test_the_view_says_it_replays_and_where_new_calls_are_recorded(
    shipped: Path, tmp_path: Path
) -> None:
    lion_nb.use_cassette(shipped, mode="replay", speed=None)
    view = BranchView(Branch(system=SYSTEM, chat_model=uninstalled(tmp_path)))
    assert f"replaying from {shipped}<" in view.cassette_badge.value
    await view.asend("Why is the sky blue?")  # on the cassette: replayed
    assert "Rayleigh" in view.rendered_html()
    assert "communicate done" in view.status.value and f"replaying from {shipped}" in (
        view.cassette_badge.value
    )
    lion_nb.use_cassette(shipped, mode="auto")
    view = BranchView(Branch(chat_model=iModel(provider="scripted")))
    local = shipped.parent / "07_cassettes.local.cassette.jsonl"
    assert f"replaying from {shipped} · recording new calls to {local}" in (
        view.cassette_badge.value
    )
    lion_nb.use_cassette(tmp_path / "new.jsonl", mode="record")
    view = BranchView(Branch(chat_model=iModel(provider="scripted")))
    assert f"recording to {tmp_path / 'new.jsonl'}<" in view.cassette_badge.value


async def test_a_prompt_typed_in_auto_mode_never_changes_the_shipped_cassette(
    shipped: Path,
) -> None:
    before = contents(shipped)
    lion_nb.use_cassette(shipped, mode="auto", speed=None)
    branch = Branch(system=SYSTEM, chat_model=iModel(provider="scripted", replies=["Green?"]))
    view = BranchView(branch)
    with pytest.warns(CassetteWarning, match="new calls are recorded into"):
        await view.asend("Why is the sky green?")
    assert view.last_error is None and branch.messages[-1].text == "Green?"
    assert contents(shipped) == before  # byte-identical
    local = shipped.parent / "07_cassettes.local.cassette.jsonl"
    lines = local.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and "Why is the sky green?" in lines[1] and "Green?" in lines[1]
    assert f"recording new calls to {local}" in view.cassette_badge.value


async def test_without_the_model_a_new_prompt_is_not_on_the_cassette_in_one_message(
    shipped: Path, tmp_path: Path
) -> None:
    before = contents(shipped)
    lion_nb.use_cassette(shipped, mode="auto", speed=None)  # notebook 07's default mode
    branch = Branch(system=SYSTEM, chat_model=uninstalled(tmp_path))
    view = BranchView(branch)
    await view.asend("Why is the sky blue?")  # recorded: replays without the model
    assert view.last_error is None
    await view.asend("And why is the sunset red?")
    error = view.last_error
    assert isinstance(error, CassetteMiss)
    box = view._error.value
    assert "Not on the cassette" in box and "This prompt is not on the cassette" in box
    assert "closest recording (call 1, line 2)" in box  # the same conversation's first turn
    assert "pip install" not in box and "<pre" not in box  # not the install recipe, no dump
    assert len(str(error)) - len(str(shipped)) < 400 and "\n" not in str(error)
    assert contents(shipped) == before
    assert not (shipped.parent / "07_cassettes.local.cassette.jsonl").exists()


async def test_editing_the_second_prompt_names_the_recorded_second_turn(tmp_path: Path) -> None:
    path = tmp_path / "01_quickstart.cassette.jsonl"
    path.write_bytes((SHIPPED.parent / "01_quickstart.cassette.jsonl").read_bytes())
    lion_nb.use_cassette(path, mode="replay", speed=None)  # notebook 01 without the model
    model = iModel(provider="local", temperature=0, seed=7, max_tokens=40)
    branch = Branch(
        system="You are a concise assistant. Answer in one short sentence.", chat_model=model
    )
    view = BranchView(branch)
    await view.asend("Name one primary colour.")  # call 2 of the recorded session
    await view.asend("What is the largest sea on Earth?")  # call 3 asked about the ocean
    error = view.last_error
    assert isinstance(error, CassetteMiss) and error.nearest is not None
    assert error.nearest["call"] == 3
    assert (
        "differs in messages[3].content: recorded 'What is the largest ocean on Earth?', now "
        "'What is the largest sea on Earth?'"
    ) in str(error)
    assert "Not on the cassette" in view._error.value


async def test_the_badge_follows_the_cassette_switched_off_and_on_at_once(
    shipped: Path, tmp_path: Path
) -> None:
    from lion_nb.magics import lion_cassette

    lion_cassette(f"{shipped} --mode auto")  # notebook 07's first cassette cell
    view = BranchView(Branch(system=SYSTEM, chat_model=iModel(provider="scripted")))
    assert f"replaying from {shipped}" in view.cassette_badge.value
    lion_cassette("--off")  # notebook 07's last cell: no send in between
    assert view.cassette_badge.value == ""
    lion_nb.use_cassette(tmp_path / "new.jsonl", mode="record")
    assert f"recording to {tmp_path / 'new.jsonl'}<" in view.cassette_badge.value
    view.close()
    lion_nb.use_cassette(None)  # a closed view is no longer told


def test_without_the_model_the_badge_says_it_cannot_record(shipped: Path, tmp_path: Path) -> None:
    lion_nb.use_cassette(shipped, mode="auto", speed=None)
    view = BranchView(Branch(system=SYSTEM, chat_model=uninstalled(tmp_path)))
    badge = view.cassette_badge.value
    assert f"replaying from {shipped} · cannot record: the model file" in badge
    assert "recording new calls" not in badge
    assert "lion-cassette-recording" not in badge  # neutral, not the red of an error
    keyless = iModel(provider="openai", model="gpt-4.1-mini", api_key_env="LION_NB_NO_SUCH_KEY")
    view = BranchView(Branch(chat_model=keyless))
    assert "cannot record: no API key (LION_NB_NO_SUCH_KEY is not set)" in (
        view.cassette_badge.value
    )
