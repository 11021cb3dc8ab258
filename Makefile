# Two commands do all set-up on a fresh machine with Python 3.11+ and make:
#   make lab    create .venv if needed, then open the course in JupyterLab (127.0.0.1, token on)
#   make test   create .venv if needed, then run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PORT   ?= 8888
# pytest workers; notebooks are spread one file per worker
JOBS   ?= 2
# Where pip finds torch. On Linux PyPI's torch is the CUDA build (a 527 MB wheel plus several GB of
# nvidia-* packages), so Linux gets PyTorch's CPU index by default; elsewhere PyPI's wheel is already
# CPU-only (macOS: CPU and Apple's MPS). Override it, e.g. for CUDA 12.8:
#   make lab TORCH_INDEX=https://download.pytorch.org/whl/cu128
# or TORCH_INDEX= (empty) for pip's own configured index.
TORCH      ?= torch==2.13.0
TORCH_INDEX ?= $(if $(filter Linux,$(shell uname -s)),https://download.pytorch.org/whl/cpu)

.PHONY: lab test test-fast notebooks browser-deps clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) '$(TORCH)'
	$(BIN)/python -m pip install --quiet -e '.[dev,instructor]'
	touch $(STAMP)

# Jupyter refuses to start as root unless told; containers and cloud notebooks often run as root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--ServerApp.allow_root=True)

lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) --ServerApp.root_dir=$(CURDIR) \
		--LabApp.default_url=/lab/tree/notebooks/00_why_communication.ipynb $(ALLOW_ROOT)

browser-deps: $(STAMP)
	bash scripts/ensure_chromium.sh

test: $(STAMP) browser-deps
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile

# Library tests only: seconds, for a quick loop while editing.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile -m "not browser" --ignore=tests/test_notebooks.py tests

# Rebuild solutions/*.ipynb and notebooks/*.ipynb from solutions/src/*.py.
notebooks: $(STAMP)
	$(BIN)/python -m course_lib.authoring build

clean:
	rm -rf $(VENV) artifacts .pytest_cache
