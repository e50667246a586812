"""Suite-wide guards: no real network (loopback only), no writes to the user's home."""

from __future__ import annotations

import functools
import inspect
import ipaddress
import os
import socket
import sys
import types
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest

from tests.support.fake_cli import FakeCLI, make_fake_cli
from tests.support.ray_clusters import shared_ray_head

pytest_plugins = [
    "tests.servers.fixtures",
    "tests.servers.real",
    "tests.support.chat_view_doubles",
]

# Ray reads its authentication mode once, when imported: token authentication (Ray's default for
# a new cluster) is said before any test imports Ray, so the test process can join the shared
# cluster (``ray_head``), whose processes use it.
os.environ.setdefault("RAY_AUTH_MODE", "token")

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_loopback(address: object) -> bool:
    if isinstance(address, str):  # AF_UNIX path
        return True
    if isinstance(address, tuple) and address:
        host = address[0]
        if host in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
    return False


def _guarded(real):
    def connect(self, address):  # type: ignore[no-untyped-def]
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
            raise ConnectionRefusedError(f"tests may only connect to loopback, not {address!r}")
        return real(self, address)

    return connect


@pytest.fixture(autouse=True)
def _no_network_and_private_home(monkeypatch, tmp_path_factory):
    monkeypatch.setattr(socket.socket, "connect", _guarded(_real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded(_real_connect_ex))
    monkeypatch.setenv("LION_NB_HOME", str(tmp_path_factory.mktemp("lion_nb_home")))
    for var in (
        "LION_NB_MODEL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def no_default_cassette() -> Iterator[None]:
    """No notebook-wide cassette during the test; the one before is restored after (every test
    in tests/cassettes, and the cassette magics' tests)."""
    from lion_nb.cassettes import active

    previous = active.set_default(None)
    yield
    active.set_default(previous)


@pytest.fixture
def fake_cli(tmp_path: Path) -> FakeCLI:
    """The fake agent behind an ``exec`` wrapper in ``tmp_path`` (tests/support/fake_cli.py)."""
    return make_fake_cli(tmp_path)


# -- markers by rule: what a test needs decides its markers, so a new test is marked when it uses
# a fixture (or lives in a folder) that needs a browser, a kernel, a real server or Ray, and
# ``make test-fast`` (``-m "not (browser or kernel or local_model or real_server or ray)"``)
# leaves it out without anyone remembering to mark it.
TEST_ROOT = Path(__file__).resolve().parent
NEEDS_BY_FOLDER = {"browser": ("browser",), "kernel": ("kernel",)}
NEEDS_BY_FIXTURE = {
    # the shared cluster and the two that join or build one (tests/flow/conftest.py)
    "ray_head": ("ray", "slow"),
    "ray_local": ("ray", "slow"),
    "ray_cluster": ("ray", "slow"),
    # tests/servers/real.py: real servers on the embedded model's weights
    "llama_server_1": ("real_server", "local_model", "slow"),
    "llama_server_4": ("real_server", "local_model", "slow"),
    "llama_cpp_server": ("real_server", "local_model", "slow"),
    # tests/kernel/conftest.py: a real ipykernel
    "kernel": ("kernel",),
    "each_kernel": ("kernel",),
    # tests/browser/conftest.py: JupyterLab, Voila, marimo or chromium itself
    "jupyter_lab": ("browser", "kernel"),
    "plain_browser": ("browser",),
    "notebook7": ("browser", "kernel"),
    "voila": ("browser", "kernel"),
    "marimo": ("browser",),
}


def needs_of(item: pytest.Item) -> set[str]:
    """The markers a test needs by rule: its folder (tests/browser, tests/kernel), the fixtures
    it uses (directly, through other fixtures or ``usefixtures``), and a module that imports
    Ray at its top (a Ray test module: its tests start or join Ray)."""
    needs: set[str] = set()
    try:
        parts = item.path.resolve().relative_to(TEST_ROOT).parts
    except ValueError:
        parts = ()
    if parts:
        needs.update(NEEDS_BY_FOLDER.get(parts[0], ()))
    for name in getattr(item, "fixturenames", ()):
        needs.update(NEEDS_BY_FIXTURE.get(name, ()))
    module = getattr(item, "module", None)
    if module is not None and getattr(getattr(module, "ray", None), "__name__", None) == "ray":
        needs.update(("ray", "slow"))
    if _starts_a_kernel(getattr(item, "function", None), module):
        needs.add("kernel")
    return needs


# what a test that starts a kernel calls: nbclient's notebook runs, jupyter_client's kernels
KERNEL_STARTERS = ("NotebookClient", "start_new_kernel", "KernelManager", "nbconvert")


def _starts_a_kernel(function: object, module: object) -> bool:
    """Whether the test's code, or a function of its module that it calls, names a kernel
    starter (one level deep: ``execute(...)`` helpers that run a notebook through nbclient)."""
    code = getattr(inspect.unwrap(function), "__code__", None) if callable(function) else None
    if code is None:
        return False
    helpers = [getattr(module, name, None) for name in _names(code)]
    return any(_names_a_starter(f) for f in (function, *helpers) if inspect.isfunction(f))


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


@functools.cache
def _names_a_starter(function: Callable[..., object]) -> bool:
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    return any(starter in source for starter in KERNEL_STARTERS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for name in sorted(needs_of(item) - {m.name for m in item.iter_markers()}):
            item.add_marker(name)


# What no rule sees at collection: a test that runs the embedded model in-process without the
# ``local_model`` marker. Each one found is named at the end of the run, to be marked.
UNMARKED_LOCAL_MODEL: list[str] = []


def _models_loaded() -> set[int]:
    # A chat view warms its imports up in a thread (``session.conversation.warm_up``): the
    # module may be in sys.modules before it has finished executing, without its functions yet.
    runtime = sys.modules.get("lion_nb.models.local_runtime")
    loaded = getattr(runtime, "loaded_models", None)
    return {id(m) for m in loaded()} if loaded is not None else set()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    before = _models_loaded()
    try:
        return (yield)
    finally:
        if item.get_closest_marker("local_model") is None and _models_loaded() - before:
            UNMARKED_LOCAL_MODEL.append(item.nodeid)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    if UNMARKED_LOCAL_MODEL:
        terminalreporter.write_line(
            f"{len(UNMARKED_LOCAL_MODEL)} test(s) loaded the embedded model without the "
            "local_model marker, so make test-fast runs them: mark them "
            "@pytest.mark.local_model:\n  " + "\n  ".join(UNMARKED_LOCAL_MODEL),
            yellow=True,
        )


def pytest_runtest_setup(item):
    """``local_model`` tests need lion_nb[local]: skipped without it on a developer machine,
    an error in CI (LION_NB_REQUIRE_LOCAL=1), where a broken install must not pass silently."""
    if item.get_closest_marker("local_model") is None:
        return
    from lion_nb.models.imodel import local_model_available

    if not local_model_available():
        if os.environ.get("LION_NB_REQUIRE_LOCAL"):
            pytest.fail("LION_NB_REQUIRE_LOCAL is set but lion_nb[local] is not installed")
        pytest.skip("the embedded model is not installed (make install-local)")


@pytest.fixture(scope="session")
def ray_head():
    """One local Ray cluster for the whole run, shared by every test that can share one (the
    Ray engine tests, the first-run test, notebook 08): started once by
    ``python -m lion_nb.flow.ray_start`` in its own process, so tests join it and leave it
    (``ray.shutdown()`` in a test only disconnects), and stopped at the end. Yields its address
    (what ``RAY_ADDRESS`` names)."""
    with shared_ray_head() as address:
        yield address


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Close the widgets the tests left open while ipywidgets' registry still exists: at
    interpreter exit each one's ``__del__`` would otherwise print a traceback (its registry
    module global is already gone)."""
    import sys

    widgets = sys.modules.get("ipywidgets")
    if widgets is not None:
        widgets.Widget.close_all()
