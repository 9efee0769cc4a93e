# The two commands the README promises: `make demo` and `make test`. Both create .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEMO   := examples/zero3_oom_rank3_of_16.log

.PHONY: demo test install install-test clean

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

clean:
	rm -rf $(VENV) build *.egg-info
