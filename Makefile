# The two commands the README promises: `make demo` and `make test`. Both create .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEMO   := examples/zero3_oom_rank3_of_16.log

.PHONY: demo test install install-test model corpus eval clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q .

install-test: $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'

demo: install
	@echo "== dsdiag $(DEMO)"
	$(BIN)/dsdiag --color never $(DEMO) || test $$? -le 1

test: install-test
	$(BIN)/python -m pytest -q

# Retrain the fallback model on corpus/ (deterministic) and write classifier/model.json.
model: install-test
	$(BIN)/python -m classifier.train

# Rerun every real-run scenario (torch + DeepSpeed on CPU, ~10 min) and rewrite their logs.
corpus: install-test
	$(BIN)/python corpus/generate/run.py --python $(abspath $(BIN))/python --all

eval: install
	$(BIN)/dsdiag eval corpus/

clean:
	rm -rf $(VENV) build *.egg-info
