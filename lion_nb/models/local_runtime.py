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
import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from lion_nb.errors import ConfigurationError
from lion_nb.models.base import DeltaKind, DeltaSink
from lion_nb.models.logprobs import TokenDecoder
from lion_nb.tokens import encode_tokens_delta

__all__ = [
    "Job",
    "LoadedModel",
    "Stopped",
    "TokenReader",
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
    """One request's state shared between the loop thread and the worker thread.

    ``logprobs``: K alternatives per token were asked for (None: off). The worker then reads
    each sampled token's distribution (``TokenReader``) into ``tokens`` and hands them to
    ``token_sink`` as ``"tokens"`` deltas."""

    __slots__ = (
        "completion_tokens",
        "logprobs",
        "prompt_tokens",
        "sink_error",
        "stop",
        "token_decoder",
        "token_sink",
        "tokens",
    )

    def __init__(self, logprobs: int | None = None, token_sink: DeltaSink | None = None) -> None:
        self.stop = threading.Event()
        self.prompt_tokens: int | None = None
        self.completion_tokens = 0
        self.sink_error: BaseException | None = None
        self.logprobs = logprobs
        self.token_sink = token_sink
        self.tokens: list[Any] | None = None if logprobs is None else []
        self.token_decoder: Any = None

    def add_token(self, piece: bytes, logprob: float, top: list[tuple[bytes, float]]) -> None:
        """One sampled token (worker thread): decoded, kept, and streamed."""
        if self.token_decoder is None:
            self.token_decoder = TokenDecoder()
        self._keep(self.token_decoder.feed(piece, logprob, top))

    def finish_tokens(self) -> list[Any] | None:
        """Every token of the reply (None when not asked for)."""
        if self.token_decoder is not None:
            self._keep(self.token_decoder.finish())
            self.token_decoder = None
        return self.tokens

    def _keep(self, new: list[Any]) -> None:
        if not new or self.tokens is None:
            return
        self.tokens.extend(new)
        if self.token_sink is not None:
            self.token_sink("tokens", encode_tokens_delta(new))


_NEAR = 12.0  # logits this far below the largest: p < 6e-6 of it, past any top K worth showing


class TokenReader:
    """Reads the distribution a token was just sampled from: the logits of the last position
    (``llama_get_logits_ith(ctx, -1)``, which llama.cpp computes for sampling anyway), as a
    log-softmax, with the K most likely tokens. No ``logits_all``: the prompt is evaluated
    with one row of logits, as without log-probabilities (``benchmarks/bench_logprobs.py``)."""

    __slots__ = ("_buf", "_ctx", "_model", "_n_vocab", "_np", "_pieces", "k")

    def __init__(self, llama: Any, k: int) -> None:
        import numpy as np  # lazy: numpy (~90 ms) comes with llama_cpp, an optional extra

        self._np = np
        self._ctx = llama._ctx
        self._model = llama._model
        self._n_vocab = llama.n_vocab()
        self._buf = np.empty(self._n_vocab, dtype=np.float32)  # exp() in place, per token
        self._pieces: dict[tuple[int, bool], bytes] = getattr(llama, "_lion_pieces", {})
        llama._lion_pieces = self._pieces  # token id -> bytes, kept with the model
        self.k = k

    def piece(self, token: int, special: bool = False) -> bytes:
        key = (token, special)
        found = self._pieces.get(key)
        if found is None:
            found = self._pieces[key] = _token_bytes(self._model.vocab, token, special)
        return found

    def read(self, token: int) -> tuple[bytes, float, list[tuple[bytes, float]]]:
        np, buf = self._np, self._buf
        logits = np.ctypeslib.as_array(self._ctx.get_logits_ith(-1), shape=(self._n_vocab,))
        top_logit = float(logits.max())
        np.subtract(logits, top_logit, out=buf)
        np.exp(buf, out=buf)
        log_z = top_logit + float(np.log(buf.sum(dtype=np.float64)))
        alternatives: list[tuple[bytes, float]] = []
        if self.k:
            # the K largest are among the few within a margin of the largest (one pass);
            # argpartition over the whole vocabulary only when fewer than K are
            near = np.flatnonzero(logits >= top_logit - _NEAR)
            if len(near) < self.k:
                near = np.argpartition(logits, -self.k)[-self.k :]
            elif len(near) > 64 * self.k:  # a flat distribution: narrow the candidates first
                near = near[np.argpartition(logits[near], -self.k)[-self.k :]]
            best = near[np.argsort(-logits[near], kind="stable")[: self.k]]
            alternatives = [
                (self.piece(int(i), special=True), float(logits[i]) - log_z) for i in best
            ]
        return self.piece(token), float(logits[token]) - log_z, alternatives


@cache
def _llama_class() -> type:
    """``llama_cpp.Llama`` plus stop checks and token counting (llama_cpp imported lazily)."""
    import llama_cpp  # lazy: llama_cpp, an optional extra (~150 ms)
    from llama_cpp import llama_cpp as capi  # lazy: llama_cpp, an optional extra (~150 ms)

    no_abort = capi.ggml_abort_callback(0)

    class InterruptibleLlama(llama_cpp.Llama):
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
            reader = None
            if job is not None and job.logprobs is not None:
                reader = TokenReader(self, job.logprobs)
            for token in super().generate(tokens, *args, **kwargs):
                if job is not None and not llama_cpp.llama_vocab_is_eog(vocab, token):
                    job.completion_tokens += 1
                    if reader is not None:  # before the next eval replaces the logits
                        job.add_token(*reader.read(token))
                yield token

    return InterruptibleLlama


def _token_bytes(vocab: Any, token: int, special: bool) -> bytes:
    """A token's bytes (llama.cpp's ``llama_token_to_piece``, sized by what it returns)."""
    from llama_cpp import llama_cpp as capi  # lazy: llama_cpp, an optional extra (~150 ms)

    size = 64
    while True:
        buf = ctypes.create_string_buffer(size)
        n = capi.llama_token_to_piece(vocab, token, buf, size, 0, special)
        if n >= 0:
            return buf.raw[:n]
        size = -n


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
