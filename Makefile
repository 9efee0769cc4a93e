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

# Without a Chromium (and no way to install one) the browser test is skipped, with a note,
# rather than failing the whole suite; every other test runs as usual.
test: install-test
	@if $(MAKE) -s browser; then $(BIN)/python -m pytest -q; else \
	  echo "note: tests/jobs/test_html.py is skipped (DSDIAG_SKIP_BROWSER=1): no headless Chromium"; \
	  DSDIAG_SKIP_BROWSER=1 $(BIN)/python -m pytest -q; fi

# tests/jobs/test_html.py opens the triage HTML report in Debian's headless Chromium. When it is
# missing, install it with apt-get (root only), saying what and why; fail when it cannot be had.
browser:
	@command -v chromium >/dev/null 2>&1 && exit 0; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
	  echo "note: Chromium is missing and cannot be installed here (apt-get install chromium needs root and apt)"; \
	  exit 1; fi; \
	echo "apt-get install chromium: the Debian package of headless Chromium, which tests/jobs/test_html.py opens the triage HTML report in"; \
	DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium && command -v chromium >/dev/null 2>&1 || \
	{ echo "note: apt-get could not install chromium (offline? no such package?)"; exit 1; }

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
