"""What the embedded model reads, and what it would say next: its chat template, tokenizer and
the logits of the prompt's last position, read without generating.

``render`` applies the model's own chat template (the GGUF's ``tokenizer.chat_template``,
through llama-cpp-python's ``Jinja2ChatFormatter``, as its chat handler and
``local._continue_prefix`` do; the formatter is built once per loaded model and shared with
them); ``pieces`` tokenizes the rendered prompt as the chat handler does (special tokens are
markup) and gives each token's id, bytes and whether it is a control token (llama.cpp's
``LLAMA_TOKEN_ATTR_CONTROL``: read as markup only where special tokens are parsed).
Tokenizing reads only the vocabulary: no generation lock.

``next_logprobs`` evaluates the prompt (plus the start of a reply) under the model's lock and
reads the last position's distribution with ``local_runtime.TokenReader``: the model's own
log-softmax over the whole vocabulary, before any sampler. It keeps what the KV cache holds
of the same prompt, as llama-cpp-python's ``generate`` does, and re-evaluates at least the last
token (its logits are what is read). A stop (the awaiting task cancelled) interrupts a long
prompt between graph nodes, through the same ``Job`` flag generation uses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from lion_nb.errors import ConfigurationError, ContextWindowError, ProviderError
from lion_nb.models.local import LocalProvider, chat_messages
from lion_nb.models.local_runtime import Job, LoadedModel, Stopped, TokenReader, executor

__all__ = ["Piece", "next_logprobs", "pieces", "render", "run_in_worker"]

Piece = tuple[int, bytes, bool]
"""One token of a prompt: its id, its bytes (special tokens as their text) and whether it is
a control token."""

T = TypeVar("T")
_LOCK_POLL = 0.05  # seconds between stop-flag checks while waiting for a busy model
_CONTROL = 8  # llama_cpp.LLAMA_TOKEN_ATTR_CONTROL (the enum, without importing llama_cpp)


def _formatter(llama: Any) -> Any:
    formatter = getattr(llama, "_lion_formatter", None)
    if formatter is not None:
        return formatter
    # lazy: llama_cpp loads the llama.cpp library (hundreds of ms); a loaded model has it
    from llama_cpp import llama_chat_format

    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        raise ConfigurationError(
            "this GGUF model has no chat template: lion_nb cannot show the prompt it reads"
        )
    eos, bos = llama.token_eos(), llama.token_bos()
    formatter = llama_chat_format.Jinja2ChatFormatter(
        template=template,
        eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
        bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
        stop_token_ids=[eos],
    )
    llama._lion_formatter = formatter
    return formatter


def render(llama: Any, messages: list[dict[str, Any]]) -> tuple[str, bool]:
    """The prompt the chat template makes of ``messages`` (lion_nb's messages as the embedded
    model is given them: ``local.chat_messages``), ending with the assistant's marker, and
    whether the tokenizer adds a BOS token before it."""
    rendered = _formatter(llama)(messages=chat_messages(messages))
    return rendered.prompt, not rendered.added_special


def pieces(llama: Any, prompt: str, add_bos: bool) -> list[Piece]:
    """``prompt`` as the model reads it, token by token."""
    # lazy: as above (the C functions of a model that is loaded already)
    import llama_cpp

    ids = llama.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=True)
    reader = TokenReader(llama, 0)  # its piece cache is kept with the model
    control: dict[int, bool] = getattr(llama, "_lion_control", {})
    llama._lion_control = control
    vocab = llama._model.vocab
    out: list[Piece] = []
    for token in ids:
        special = control.get(token)
        if special is None:
            special = control[token] = bool(llama_cpp.llama_vocab_get_attr(vocab, token) & _CONTROL)
        out.append((token, reader.piece(token, special=True), special))
    return out


def next_logprobs(
    provider: LocalProvider,
    messages: list[dict[str, Any]],
    prefix: str | None,
    k: int,
    job: Job,
) -> list[tuple[bytes, float]] | None:
    """Worker thread: the ``k`` most likely next tokens after ``messages`` (and ``prefix``,
    the start of the reply) as bytes and log-probabilities; None when stopped."""
    loaded = _hold(provider, job)
    if loaded is None:
        return None
    llama = loaded.llama
    try:
        prompt, add_bos = render(llama, messages)
        tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=True)
        if prefix:
            tokens += llama.tokenize(prefix.encode("utf-8"), add_bos=False, special=False)
        window = llama.n_ctx()
        if len(tokens) >= window:
            error = ContextWindowError(
                f"the prompt is {len(tokens):,} tokens; the embedded model's window holds "
                f"{window:,} (n_ctx={window})",
                window=window,
                tokens=len(tokens),
            )
            error.hint = "send fewer or shorter messages, or load the model with a larger n_ctx"
            raise error
        llama.job = job
        _evaluate(llama, tokens)
        _, _, alternatives = TokenReader(llama, k).read(tokens[-1])
        return alternatives
    except Stopped:
        return None
    except (ValueError, RuntimeError) as exc:  # a decode failure
        raise ProviderError(f"llama.cpp: {exc}", provider="local") from exc
    finally:
        llama.job = None
        loaded.lock.release()


def _hold(provider: LocalProvider, job: Job) -> LoadedModel | None:
    """The loaded model with its lock held (as ``LocalProvider`` waits for its turn: polling
    the stop flag); None when stopped while waiting."""
    while True:
        loaded = provider.loaded()
        while not loaded.lock.acquire(timeout=_LOCK_POLL):
            if job.stop.is_set():
                return None
        if not loaded.closed:
            return loaded
        loaded.lock.release()  # unloaded while we waited: load it again


def _evaluate(llama: Any, tokens: list[int]) -> None:
    """Evaluate ``tokens``, keeping the KV cache's common start with them (at most all but
    the last token, whose logits are read)."""
    cached = llama.input_ids[: llama.n_tokens]
    same = 0
    limit = min(len(cached), len(tokens) - 1)
    while same < limit and cached[same] == tokens[same]:
        same += 1
    if same == 0 or not llama._ctx.kv_cache_seq_rm(-1, same, -1):
        llama.reset()
        same = 0
    llama.n_tokens = same
    llama.eval(tokens[same:])


async def run_in_worker(work: Callable[[Job], T]) -> T | None:
    """``work(job)`` on the embedded model's worker threads; cancelling the awaiting task
    sets the job's stop flag and waits (briefly) for the worker to let the model go."""
    loop = asyncio.get_running_loop()
    job = Job()
    future = loop.run_in_executor(executor(), work, job)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        job.stop.set()
        await asyncio.wait([future], timeout=2.0)
        raise
