"""Starting Ray for flows, or joining one that runs, quickly and quietly on a small machine.

    from lion_nb.flow.ray_start import start_ray
    started = start_ray(num_cpus=2)      # StartedRay(seconds=..., reused=False, attempts=1)
    start_ray(num_cpus=2, defer_imports=True)  # faster: ~4 s on two quiet cores (see below)
    start_ray(address="auto")            # join the cluster `ray start --head` started here

**Join or start.** With ``address=`` (or ``RAY_ADDRESS`` in the environment) ``start_ray``
joins that cluster; the options only a new node takes (``num_cpus``, ``resources``,
``include_dashboard``, ...) are dropped, since the running cluster has its own. Without an
address it starts a new local cluster (``address="local"``: a cluster ``ray start`` left running
is joined only when asked). A Ray already initialised in this process is reused as it is.

**Fast, when asked.** A local cluster is about eight Python processes (the dashboard head, the
autoscaler monitor, the log monitor, two agents, the workers), and each imports ``jsonschema``,
which imports ``rfc3987_syntax`` when Jupyter installed it: that package builds a grammar at
import, ~2 s of CPU per process, most of the start on two cores. With ``defer_imports=True``
(``--defer-imports`` on the command line) the processes started here get ``_ray_pythonpath``
first on their ``PYTHONPATH``, where a stand-in defers that work to the first IRI validated (see
its docstring), and this process's own ``import ray`` gets the same stand-in. It is off by
default: the stand-in shadows a package the user's Jupyter depends on, so it is applied only
where someone asked for it (the test suite's cluster and the benchmarks do). It waits for an
upstream fix: jsonschema importing ``rfc3987_syntax`` only when an IRI is first checked
(python-jsonschema/jsonschema#1428, "Lazy import rfc3987_syntax"), or moving to the fork that
builds its grammar lazily, ``rfc3987-syntax2`` (jsonschema pull request #1521); neither is in
jsonschema 4.26.0, whose ``_format.py`` still imports ``rfc3987_syntax`` at import. When one
ships, the stand-in and this option go (the option first stays, doing nothing, for a release).

**Busy machines.** Ray's own start-up waits are raised for the processes started here
(``RAY_<name>`` overrides Ray's config: the raylet's wait for GCS, the agents' and workers'
registration), unless already set. ``ray.init`` itself waits a fixed 30 s for its raylet; after
such a time-out, or a gRPC "Deadline Exceeded", ``start_ray`` shuts the half-started node down
and tries once more, and when Ray still does not start it raises ``EngineUnavailable`` saying
what happened and what to do.

**Quiet.** Ray's log lines below WARNING stay out of the cell (``logging_level``,
``log_to_driver=False``). Token authentication, Ray's default for a new cluster, is set
explicitly (``RAY_AUTH_MODE=token``, Ray's documented switch) before Ray is imported, so Ray
does not warn that it chose it; a mode you set wins, and a Ray imported before ``start_ray``
has read its config already (it then warns as usual).

``python -m lion_nb.flow.ray_start [--num-cpus N]`` starts a local cluster this way and keeps it
until Ctrl-C, printing the ``RAY_ADDRESS`` that notebooks and test runs join it with.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lion_nb.flow.errors import EngineUnavailable

__all__ = ["StartedRay", "import_ray", "is_slow_start", "ray_process_env", "start_ray"]

INSTALL_HINT = "pip install 'lion_nb[ray]'"
_SLOW_START = ("timed out during startup", "Deadline Exceeded", "failed to connect to GCS")
# where the stand-in for ``rfc3987_syntax`` lives (see the module docstring)
FAST_IMPORTS = Path(__file__).resolve().parent / "_ray_pythonpath"
# Ray's start-up waits for a busy machine (defaults 10 s, 30 s and 60 s)
SLOW_MACHINE_WAITS = {
    "RAY_raylet_start_wait_time_s": "60",
    "RAY_agent_register_timeout_ms": "120000",
    "RAY_worker_register_timeout_seconds": "180",
}
# ray.init options that only a new node takes: joining a running cluster, they go
NEW_NODE_ONLY = frozenset(
    {
        "num_cpus",
        "num_gpus",
        "resources",
        "labels",
        "object_store_memory",
        "include_dashboard",
        "dashboard_host",
        "dashboard_port",
        "_system_config",
        "_enable_object_reconstruction",
        "_node_name",
        "_memory",
        "_plasma_directory",
        "_temp_dir",
    }
)


@dataclass(frozen=True, slots=True)
class StartedRay:
    """How Ray came up for a flow: how long it took, whether it was already running here, how
    many tries a busy machine needed, and the cluster joined (``address``, None for a new
    local one)."""

    seconds: float  # how long the start (or join) took, importing Ray included; 0 when reused
    reused: bool  # Ray was already initialised in this process
    attempts: int = 1
    address: str | None = None  # the cluster joined (address= or RAY_ADDRESS); None: a new one

    @property
    def joined(self) -> bool:
        """Whether an existing cluster was joined (``address``), rather than a new one started."""
        return self.address is not None


def is_slow_start(exc: BaseException) -> bool:
    """Whether Ray failed to start because its processes were too slow (a busy machine)."""
    return any(words in str(exc) for words in _SLOW_START)


def _defer_rfc3987_grammar() -> None:
    """In this process: the stand-in for ``rfc3987_syntax`` before jsonschema imports the
    real one (nothing changes if jsonschema's formats are loaded already)."""
    if "rfc3987_syntax" in sys.modules or "jsonschema._format" in sys.modules:
        return
    init = FAST_IMPORTS / "rfc3987_syntax" / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        "rfc3987_syntax", init, submodule_search_locations=[]
    )
    if spec is None or spec.loader is None:  # pragma: no cover - the file ships with lion_nb
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["rfc3987_syntax"] = module
    try:
        spec.loader.exec_module(module)
    except ImportError:  # not installed: jsonschema goes without it, as it would anyway
        del sys.modules["rfc3987_syntax"]


def import_ray(*, defer_imports: bool = False) -> Any:
    """``import ray``, or ``EngineUnavailable`` naming the install command. ``defer_imports``:
    the stand-in for ``rfc3987_syntax`` first, in this process (see the module docstring)."""
    if defer_imports and "ray" not in sys.modules:
        _defer_rfc3987_grammar()
    try:
        import ray  # lazy: ray (an optional extra) takes ~1.4 s to import
    except ImportError as exc:
        raise EngineUnavailable(
            f"engine='ray' needs Ray, which is not installed: {INSTALL_HINT}"
        ) from exc
    return ray


def _token_at_hand() -> bool:
    """Whether a Ray token is where Ray looks for one (its token-authentication docs)."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return True
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token"
    return Path(path).is_file()


def _choose_token_auth(*, joining: bool) -> None:
    """``RAY_AUTH_MODE=token`` set explicitly, before Ray reads its config, so Ray does not
    warn that it chose it: Ray's default for a new cluster, and for a cluster joined when a
    token is at hand (as Ray does for ``address="auto"``; an explicit address needs it said).
    A mode already set, or a Ray already imported (its config read), is left alone."""
    if "RAY_AUTH_MODE" in os.environ or "ray" in sys.modules:
        return
    if not joining or _token_at_hand():
        os.environ["RAY_AUTH_MODE"] = "token"


@contextlib.contextmanager
def ray_process_env(*, defer_imports: bool = False) -> Iterator[None]:
    """The environment the processes of a new local cluster start with (they inherit this
    process's): Ray's start-up waits raised and, with ``defer_imports``, the stand-in first on
    ``PYTHONPATH``, over the rest of the environment. Restored afterwards."""
    saved = {name: os.environ.get(name) for name in (*SLOW_MACHINE_WAITS, "PYTHONPATH")}
    for name, wait in SLOW_MACHINE_WAITS.items():
        os.environ.setdefault(name, wait)
    if defer_imports:
        path = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(FAST_IMPORTS), path) if p)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def start_ray(
    *,
    address: str | None = None,
    attempts: int = 2,
    ray: Any = None,
    defer_imports: bool = False,
    **init_kw: Any,
) -> StartedRay:
    """Join the cluster at ``address`` (or ``RAY_ADDRESS``), else start a local one, with the
    quiet defaults a notebook wants; see the module docstring. Reuses a Ray already
    initialised here. ``init_kw`` go to ``ray.init``; ``ray``: the module (tests pass one).
    ``defer_imports=True``: the start-up shortcut (a stand-in for ``rfc3987_syntax`` in the
    new cluster's processes and this one); off unless asked, see "Fast, when asked"."""
    started = time.monotonic()
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address == "local":
        address = None
    if ray is None:
        _choose_token_auth(joining=address is not None)
        ray = import_ray(defer_imports=defer_imports)
    if ray.is_initialized():
        return StartedRay(0.0, reused=True)
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    if address is None:
        options.update(address="local", include_dashboard=False, **init_kw)
    else:
        kept = {k: v for k, v in init_kw.items() if k not in NEW_NODE_ONLY}
        options.update(address=address, **kept)
    for attempt in range(1, attempts + 1):
        try:
            environment: contextlib.AbstractContextManager[None] = (
                ray_process_env(defer_imports=defer_imports)
                if address is None
                else contextlib.nullcontext()
            )
            with environment:
                ray.init(**options)
        except Exception as exc:
            ray.shutdown()  # a half-started node: its processes go before the next attempt
            if not is_slow_start(exc) or attempt == attempts:
                raise _not_started(exc, address, attempt, time.monotonic() - started) from exc
            continue
        return StartedRay(
            round(time.monotonic() - started, 2), reused=False, attempts=attempt, address=address
        )
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _not_started(
    exc: Exception, address: str | None, attempt: int, waited: float
) -> EngineUnavailable:
    tries = f"{attempt} attempt{'s' if attempt > 1 else ''} in {waited:.0f} s"
    if address is not None:
        return EngineUnavailable(
            f"Ray could not join the cluster at {address!r} ({tries}): {exc}. Is it running "
            f"(`ray status --address {address}`)? Unset RAY_ADDRESS to start a local cluster "
            "instead."
        )
    return EngineUnavailable(
        f"Ray did not start ({tries}): {exc}. On a busy machine its processes may need longer "
        "than Ray waits for them: close other heavy work and run the cell again, or start Ray "
        "once in a terminal (`python -m lion_nb.flow.ray_start`, or `ray start --head "
        "--num-cpus=2`) and join it from here with RAY_ADDRESS=auto."
    )


def main(argv: list[str] | None = None) -> None:
    """``python -m lion_nb.flow.ray_start``: a local cluster kept until Ctrl-C (or SIGTERM)."""
    parser = argparse.ArgumentParser(
        prog="python -m lion_nb.flow.ray_start", description=main.__doc__
    )
    parser.add_argument("--num-cpus", type=int, default=None)
    parser.add_argument("--node-ip-address", default=None, help="e.g. 127.0.0.1")
    parser.add_argument(
        "--defer-imports",
        action="store_true",
        help="the start-up shortcut: rfc3987_syntax's grammar deferred in Ray's processes",
    )
    args = parser.parse_args(argv)
    kw: dict[str, Any] = {"num_cpus": args.num_cpus, "defer_imports": args.defer_imports}
    if args.node_ip_address:
        kw["_node_ip_address"] = args.node_ip_address
    os.environ.pop("RAY_ADDRESS", None)  # this one starts a cluster
    started = start_ray(**kw)
    ray = import_ray(defer_imports=args.defer_imports)
    gcs = ray.get_runtime_context().gcs_address
    print(f"Ray ready in {started.seconds:.1f} s. Join it with RAY_ADDRESS={gcs}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
