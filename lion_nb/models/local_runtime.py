"""The llama.cpp runtime behind ``LocalProvider``: loading, sharing and interrupting models.

A model is loaded once per process for each (GGUF file, ``n_ctx``) and shared by every provider
that asks for it. A llama.cpp context serves one request at a time, so ``LoadedModel.lock``
serialises generation. ``InterruptibleLlama`` (built on first use, so importing this module
does not import llama_cpp) checks the running request's stop flag before evaluating each token,
and while a multi-token prompt batch is evaluated it installs llama.cpp's abort callback, so a
stop interrupts even a prompt that takes seconds. It also counts prompt and completion tokens,
which the streamed chunks do not report.
"""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from lion_nb.errors import ConfigurationError
from lion_nb.models.base import DeltaKind, DeltaSink

__all__ = [
    "Job",
    "LoadedModel",
    "Stopped",
    "default_threads",
    "executor",
    "load_model",
    "loaded_models",
    "loop_sink",
    "unload_models",
]


@dataclass(eq=False)
class LoadedModel:
    """A llama.cpp model shared by every provider using the same file and ``n_ctx``.
    ``lock`` serialises generation: one llama.cpp context serves one request at a time."""

    path: Path
    n_ctx: int
    llama: Any
    lock: threading.Lock
    closed: bool = False  # set by unload_models, under ``lock``


_MODELS: dict[tuple[str, int], LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


@cache
def executor() -> ThreadPoolExecutor:
    """The worker threads of local generation, apart from the event loop's default executor:
    requests waiting for a busy model hold a thread each, and must not starve ``to_thread``
    users (sync tools) of theirs."""
    return ThreadPoolExecutor(max_workers=32, thread_name_prefix="lion_nb-local")


def loaded_models() -> list[LoadedModel]:
    """The models loaded in this process."""
    with _MODELS_LOCK:
        return list(_MODELS.values())


def unload_models() -> int:
    """Forget (and free) every loaded model that is not generating; returns how many."""
    freed = 0
    with _MODELS_LOCK:
        for key, loaded in list(_MODELS.items()):
            if loaded.lock.acquire(blocking=False):
                try:
                    del _MODELS[key]
                    loaded.closed = True
                    loaded.llama.close()
                    freed += 1
                finally:
                    loaded.lock.release()
    return freed


def default_threads() -> int:
    """Half the CPUs this process may use (at least one), for generation and prompt batches.

    llama.cpp's threads meet at a barrier after every operation, so one thread that the OS
    preempts stalls the others: measured on 2 busy cores, two threads generated 2.5 tok/s where
    one thread generated 47. Half the CPUs (llama-cpp-python's own default for generation, and
    one thread per physical core on hyper-threaded machines) leaves room for the kernel, the
    browser and the event loop.

    At most ``OMP_NUM_THREADS`` when it is set: Ray sets it in each worker to the CPUs its task
    reserved (``num_cpus``, 1 by default), so N workers of a flow on N cores use one thread each
    instead of each taking half the machine and stalling one another."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    threads = max(1, cpus // 2)
    cap = os.environ.get("OMP_NUM_THREADS", "").strip()
    if cap.isdigit() and int(cap) > 0:
        threads = min(threads, int(cap))
    return threads


def load_model(path: Path, n_ctx: int, n_threads: int | None, seed: int) -> LoadedModel:
    """The cached model for (path, n_ctx), loading it on first use. Blocking: worker threads
    only. Holding the registry lock while loading makes a concurrent first use wait for this
    load instead of starting a second one (a load takes ~0.2 s for SmolLM2)."""
    key = (str(path), n_ctx)
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is not None:
            return loaded
        threads = n_threads or default_threads()
        try:
            llama = _llama_class()(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=threads,
                n_threads_batch=threads,
                seed=seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ConfigurationError(f"cannot load the GGUF model {str(path)!r}: {exc}") from exc
        loaded = _MODELS[key] = LoadedModel(path, n_ctx, llama, threading.Lock())
        return loaded


class Stopped(Exception):  # a signal between runtime and provider; never leaves complete()
    """The request's stop flag was seen; generation ended early on purpose."""


class Job:
    """One request's state shared between the loop thread and the worker thread."""

    __slots__ = ("completion_tokens", "prompt_tokens", "sink_error", "stop")

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.prompt_tokens: int | None = None
        self.completion_tokens = 0
        self.sink_error: BaseException | None = None


@cache
def _llama_class() -> type:
    """``llama_cpp.Llama`` plus stop checks and token counting (llama_cpp imported lazily)."""
    import llama_cpp
    from llama_cpp import llama_cpp as capi

    no_abort = capi.ggml_abort_callback(0)

    class InterruptibleLlama(llama_cpp.Llama):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.job: Job | None = None
            # Kept on the instance: ctypes must not free the callback while C holds it.
            self._abort_cb = capi.ggml_abort_callback(self._should_abort)

        def _should_abort(self, _data: Any) -> bool:
            job = self.job
            return job is not None and job.stop.is_set()

        def eval(self, tokens: Any) -> None:
            job = self.job
            if job is None:
                return super().eval(tokens)
            if job.stop.is_set():
                raise Stopped
            if len(tokens) <= 1:  # one generated token: the per-token check above suffices
                return super().eval(tokens)
            # A prompt batch can take seconds; the abort callback runs between graph nodes
            # (a Python call each, which is why it is off while generating token by token).
            capi.llama_set_abort_callback(self._ctx.ctx, self._abort_cb, None)
            try:
                return super().eval(tokens)
            except RuntimeError:
                if job.stop.is_set():
                    self.reset()  # the aborted batch left the KV cache undefined
                    raise Stopped from None
                raise
            finally:
                capi.llama_set_abort_callback(self._ctx.ctx, no_abort, None)

        def generate(self, tokens: Any, *args: Any, **kwargs: Any) -> Any:
            # The stream carries no usage: count the prompt and every non-end token here, as
            # llama.cpp's non-streamed usage does.
            job = self.job
            if job is not None:
                job.prompt_tokens = len(tokens)
            vocab = self._model.vocab
            for token in super().generate(tokens, *args, **kwargs):
                if job is not None and not llama_cpp.llama_vocab_is_eog(vocab, token):
                    job.completion_tokens += 1
                yield token

    return InterruptibleLlama


def loop_sink(loop: asyncio.AbstractEventLoop, job: Job, on_delta: DeltaSink) -> DeltaSink:
    """A sink callable from the worker thread that runs ``on_delta`` on the loop's thread, in
    order. Deltas arriving after a stop are dropped (the run has ended); an exception raised by
    ``on_delta`` stops generation and is re-raised by ``complete``."""

    def deliver(kind: DeltaKind, delta: str, name: str | None, call_id: str | None) -> None:
        if job.stop.is_set():
            return
        try:
            if name is None and call_id is None:
                on_delta(kind, delta)
            else:
                on_delta(kind, delta, name=name, call_id=call_id)
        except BaseException as exc:
            job.sink_error = exc
            job.stop.set()

    def sink(
        kind: DeltaKind, delta: str, *, name: str | None = None, call_id: str | None = None
    ) -> None:
        try:
            loop.call_soon_threadsafe(deliver, kind, delta, name, call_id)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            job.stop.set()

    return sink
