# The two commands the README promises: `make demo` and `make test`. Both create .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEMO   := examples/zero3_oom_rank3_of_16.log

.PHONY: demo test install install-test browser model corpus eval clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q .

# torch first and pinned: an unpinned torch (pulled in by deepspeed) is a multi-GB CUDA build.
# The preflight tests (tests/preflight/test_check_config.py, tests/preflight/test_env.py) run against this
# exact deepspeed; classifier/preflight/deepspeed/schema.py follows it.
install-test: $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q deepspeed==0.19.8
	$(BIN)/pip install -q -e '.[test]'

demo: install
	@echo "== dsdiag $(DEMO)"
	$(BIN)/dsdiag --color never $(DEMO) || test $$? -le 1

test: install-test browser
	$(BIN)/python -m pytest -q

# tests/jobs/test_html.py drives Debian's headless Chromium; install it when missing (needs root).
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } || \
	  echo "note: no chromium here and not root: tests/jobs/test_html.py will fail (apt-get install chromium)"

# Retrain the fallback model on corpus/ (deterministic) and write classifier/diagnosis/model.json.
model: install-test
	$(BIN)/python -m classifier.corpus.train

# Rerun every real-run scenario (torch + DeepSpeed on CPU, ~10 min) and rewrite their logs.
corpus: install-test
	$(BIN)/python corpus/generate/run.py --python $(abspath $(BIN))/python --all

eval: install
	$(BIN)/dsdiag eval corpus/

clean:
	rm -rf $(VENV) build *.egg-info
