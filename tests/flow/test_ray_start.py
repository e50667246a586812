"""``start_ray``: a running cluster joined when ``address=`` or ``RAY_ADDRESS`` names one (the
options only a new node takes dropped), else a local cluster started quietly, fast, with Ray's
start-up waits raised, once more when a busy machine makes its start time out, and a clear
message when it still does not start. These rules are checked on a stand-in for the ``ray``
module (a slow raylet cannot be produced on demand); the real start and join are checked by
every Ray test, whose cluster starts through it and which join it (tests/conftest.py
``ray_head``)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from lion_nb.flow.errors import EngineUnavailable
from lion_nb.flow.ray_start import (
    FAST_IMPORTS,
    SLOW_MACHINE_WAITS,
    is_slow_start,
    ray_process_env,
    start_ray,
)

TIMED_OUT = Exception(
    "The current node timed out during startup. This could happen because some of the raylet "
    "failed to startup or the GCS has become overloaded."
)


class RayStandIn:
    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.inits: list[dict] = []
        self.environments: list[dict] = []
        self.shutdowns = 0
        self.up = False

    def is_initialized(self) -> bool:
        return self.up

    def init(self, **kw) -> None:
        self.inits.append(kw)
        self.environments.append(dict(os.environ))  # what the processes it starts inherit
        if self.failures:
            raise self.failures.pop(0)
        self.up = True

    def shutdown(self) -> None:
        self.shutdowns += 1
        self.up = False


@pytest.fixture(autouse=True)
def _no_ray_address(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


def test_a_start_that_times_out_is_tried_again_quietly() -> None:
    ray = RayStandIn(TIMED_OUT)
    started = start_ray(num_cpus=2, ray=ray)
    assert started.attempts == 2 and not started.reused and ray.up
    assert ray.shutdowns == 1  # the half-started node went before the second attempt
    assert (
        ray.inits[0]
        == ray.inits[1]
        == {
            "address": "local",  # a new cluster: one `ray start` left running is joined only if asked
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": logging.WARNING,  # Ray's INFO lines stay out of the cell
            "num_cpus": 2,
        }
    )


def test_a_start_that_keeps_timing_out_says_what_to_do() -> None:
    ray = RayStandIn(
        TIMED_OUT, Exception("Failed to get node info b'RPC error: Deadline Exceeded'")
    )
    with pytest.raises(EngineUnavailable, match="Ray did not start") as info:
        start_ray(ray=ray)
    assert "ray start --head" in str(info.value) and "2 attempts" in str(info.value)
    assert not ray.up


def test_other_failures_are_not_retried_and_a_running_ray_is_reused() -> None:
    ray = RayStandIn(ValueError("bad address"))
    with pytest.raises(EngineUnavailable, match="bad address"):
        start_ray(ray=ray)
    assert len(ray.inits) == 1 and not is_slow_start(ValueError("bad address"))
    ray.up = True
    assert start_ray(ray=ray).reused and len(ray.inits) == 1


def test_a_new_cluster_starts_fast_with_raised_waits_and_the_environment_is_restored(
    monkeypatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", "/mine")
    monkeypatch.setenv("RAY_worker_register_timeout_seconds", "999")  # a value set wins
    before = dict(os.environ)
    ray = RayStandIn()
    start_ray(num_cpus=2, ray=ray, defer_imports=True)
    seen = ray.environments[0]
    assert seen["PYTHONPATH"] == os.pathsep.join([str(FAST_IMPORTS), "/mine"])
    assert (
        seen["RAY_raylet_start_wait_time_s"] == SLOW_MACHINE_WAITS["RAY_raylet_start_wait_time_s"]
    )
    assert seen["RAY_agent_register_timeout_ms"] == "120000"
    assert seen["RAY_worker_register_timeout_seconds"] == "999"
    assert dict(os.environ) == before


@pytest.mark.parametrize("how", ["argument", "RAY_ADDRESS"])
def test_a_running_cluster_is_joined_without_the_options_of_a_new_node(how, monkeypatch) -> None:
    if how == "RAY_ADDRESS":
        monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")
    before = dict(os.environ)
    ray = RayStandIn()
    kw = {"address": "127.0.0.1:6379"} if how == "argument" else {}
    started = start_ray(
        num_cpus=2, include_dashboard=False, object_store_memory=10**8, namespace="n", ray=ray, **kw
    )
    assert started.joined and started.address == "127.0.0.1:6379" and not started.reused
    # what ray.init refuses when joining ("num_cpus and num_gpus must not be provided") is gone
    assert ray.inits == [
        {
            "address": "127.0.0.1:6379",
            "log_to_driver": False,
            "logging_level": logging.WARNING,
            "namespace": "n",
        }
    ]
    assert ray.environments[0] == before  # nothing is started: the environment is not touched


def test_a_cluster_that_cannot_be_joined_says_so() -> None:
    ray = RayStandIn(ConnectionError("Could not find any running Ray instance."))
    with pytest.raises(EngineUnavailable, match="could not join the cluster at 'auto'") as info:
        start_ray(address="auto", ray=ray)
    assert "ray status --address auto" in str(info.value) and "Unset RAY_ADDRESS" in str(info.value)
    assert len(ray.inits) == 1


def test_address_local_starts_a_new_cluster() -> None:
    ray = RayStandIn()
    assert not start_ray(address="local", ray=ray).joined
    assert ray.inits[0]["address"] == "local" and ray.inits[0]["include_dashboard"] is False


def test_by_default_a_new_cluster_gets_no_stand_in_but_the_raised_waits(monkeypatch) -> None:
    """The start-up shortcut is opt-in: a default start leaves the cluster's ``PYTHONPATH``
    (and, without one, sets none), so ``rfc3987_syntax`` stays the user's own package."""
    monkeypatch.setenv("PYTHONPATH", "/mine")
    ray = RayStandIn()
    start_ray(num_cpus=2, ray=ray)
    assert ray.environments[0]["PYTHONPATH"] == "/mine"
    assert ray.environments[0]["RAY_agent_register_timeout_ms"] == "120000"
    monkeypatch.delenv("PYTHONPATH")
    with ray_process_env():
        assert "PYTHONPATH" not in os.environ


def test_the_command_line_start_defers_imports_only_when_asked(monkeypatch) -> None:
    from lion_nb.flow import ray_start

    asked: list[bool] = []

    def stop_here(**kw):  # the options main() starts with, then no cluster
        asked.append(kw["defer_imports"])
        raise SystemExit(0)

    monkeypatch.setattr(ray_start, "start_ray", stop_here)
    for argv in ([], ["--defer-imports"]):
        with pytest.raises(SystemExit):
            ray_start.main(argv)
    assert asked == [False, True]


def test_the_environment_is_restored_when_the_start_fails(monkeypatch) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    with pytest.raises(EngineUnavailable), ray_process_env(defer_imports=True):
        assert os.environ["PYTHONPATH"] == str(FAST_IMPORTS)
        raise EngineUnavailable("boom")
    assert "PYTHONPATH" not in os.environ


@pytest.mark.slow  # a fresh interpreter imports Ray and jsonschema: seconds of real work
@pytest.mark.parametrize("where", ["a Ray process", "the notebook"])
def test_importing_ray_does_not_build_the_iri_grammar_until_an_iri_is_checked(where) -> None:
    """The stand-in on a Ray process's path, or loaded by ``import_ray(defer_imports=True)`` in
    the notebook's process: importing Ray (and jsonschema) no longer builds rfc3987_syntax's
    parser (~2 s of CPU); the first IRI validated builds it, with the real package's answers."""
    pytest.importorskip("rfc3987_syntax")
    imports = (
        "import ray"
        if where == "a Ray process"
        else ("from lion_nb.flow.ray_start import import_ray\nimport_ray(defer_imports=True)")
    )
    code = (
        f"import sys\n{imports}\nimport jsonschema\n"
        "built = 'rfc3987_syntax.syntax_helpers' in sys.modules\n"
        "check = jsonschema.FormatChecker()\n"
        "v = jsonschema.Draft7Validator({'format': 'iri'}, format_checker=check)\n"
        "print(built, v.is_valid('https://example.org/caf\\u00e9'), v.is_valid('no iri'),"
        " 'rfc3987_syntax.syntax_helpers' in sys.modules)\n"
    )
    path = [str(FAST_IMPORTS)] if where == "a Ray process" else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, *sys.path])}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.stdout.split() == ["False", "True", "False", "True"], out.stderr


@pytest.mark.slow  # a fresh interpreter imports Ray and jsonschema: seconds of real work
def test_by_default_importing_ray_leaves_the_users_rfc3987_syntax_alone() -> None:
    """Not asked, ``import_ray`` (what ``engine="ray"`` and ``start_ray`` call in the user's
    kernel) imports the real ``rfc3987_syntax``, never the stand-in."""
    pytest.importorskip("rfc3987_syntax")
    code = (
        "import sys\nfrom lion_nb.flow.ray_start import import_ray\nimport_ray()\n"
        "import jsonschema\nprint(sys.modules['rfc3987_syntax'].__file__)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert str(FAST_IMPORTS) not in out.stdout and "rfc3987_syntax" in out.stdout
