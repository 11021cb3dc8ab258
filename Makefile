# Two commands do all set-up on a fresh machine with Python 3.11+ and make:
#   make lab    create .venv if needed, copy new chapters into work/, open work/ in JupyterLab
#               (127.0.0.1, token on)
#   make test   create .venv if needed (with the hub extra, whose tests run too), then run the whole test suite
# Also: make lab-instructor (the whole repository, nbgrader on), make reset-notebook NB=01_pcie,
#   make hub (a JupyterHub on 127.0.0.1 for a class on this machine; as root)
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

.PHONY: lab lab-instructor hub hub-check work reset-notebook test test-fast notebooks browser-deps clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) '$(TORCH)'
	$(BIN)/python -m pip install --quiet -e '.[dev,instructor]'
	touch $(STAMP)

# Jupyter refuses to start as root unless told; containers and cloud notebooks often run as root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--ServerApp.allow_root=True)

# The learner's own copies: work/ (git-ignored) gets each chapter of notebooks/ that it lacks; a file
# already there is never overwritten, so `git pull` brings new chapters without touching a learner's work.
WORK ?= work

work:
	@mkdir -p $(WORK)
	@for nb in notebooks/*.ipynb; do \
		test -e "$(WORK)/$${nb##*/}" || { cp "$$nb" "$(WORK)/" && echo "new in $(WORK)/: $${nb##*/}"; }; \
	done

# The learner's lab serves work/ only (solutions/ is not in it), with nbgrader's extensions off (they
# are for instructors, and warn "No nbgrader_config.py" outside a course folder) and no news prompt
# (jupyter/learner-settings/).
NBGRADER_SERVER_EXTENSIONS := formgrader validate_assignment assignment_list course_list
LEARNER_FLAGS := --LabApp.app_settings_dir=$(CURDIR)/jupyter/learner-settings \
	$(foreach e,$(NBGRADER_SERVER_EXTENSIONS),--ServerApp.jpserver_extensions=nbgrader.server_extensions.$(e)=False)
# A saved notebook keeps each explorer's static view, not a widget whose model dies with the kernel
# (course_lib/notebook_save.py).
LAB_FLAGS = --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) $(ALLOW_ROOT) \
	--ContentsManager.pre_save_hook=course_lib.notebook_save.pre_save_hook

LEARNER_URL := /lab/tree/00_why_communication.ipynb

lab: $(STAMP) work
	$(BIN)/jupyter lab $(LAB_FLAGS) --ServerApp.root_dir=$(abspath $(WORK)) $(LEARNER_FLAGS) \
		--LabApp.default_url=$(LEARNER_URL)

# Instructors: the whole repository (solutions/, notebooks/, work/), nbgrader's extensions on. The
# nbgrader course is $(COURSE) (created on first use, with its exchange folder; it must lie inside the
# repository, which the server serves); its nbgrader_config.py is found through JUPYTER_CONFIG_PATH, so
# Formgrader, and nbgrader in the lab's terminals, open the course with no configuration by hand.
COURSE ?= course

# The instructor's lab: no news prompt (jupyter/instructor-settings/), no *.egg-info in the file browser
# (jupyter_server's default hide_globs, plus it), and Formgrader's pages with the lab's own MathJax
# (jupyter/instructor-data/nbconvert/templates/classic/mathjax.html.j2, first on JUPYTER_PATH), so
# maths typesets offline.
INSTRUCTOR_FLAGS := --LabApp.app_settings_dir=$(CURDIR)/jupyter/instructor-settings \
	$(foreach g,__pycache__ *.pyc *.pyo .DS_Store *~ *.egg-info,'--ContentsManager.hide_globs=$(g)')

lab-instructor: $(STAMP)
	test -f $(COURSE)/nbgrader_config.py || $(BIN)/python -m course_lib nbgrader init $(COURSE)
	JUPYTER_CONFIG_PATH=$(abspath $(COURSE))$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH} \
	JUPYTER_PATH=$(CURDIR)/jupyter/instructor-data$${JUPYTER_PATH:+:$$JUPYTER_PATH} \
		$(BIN)/jupyter lab $(LAB_FLAGS) --ServerApp.root_dir=$(CURDIR) $(INSTRUCTOR_FLAGS) \
		--LabApp.default_url=/lab/tree/solutions/00_why_communication.ipynb

# A JupyterHub on this machine (as root: each learner's lab runs as their own system account), on
# 127.0.0.1:$(HUB_PORT) (and the two ports after it, for the hub's and the proxy's APIs), with state (database, generated cookie secret, the lab budget folder) in
# $(HUB_DIR). Each learner's server is the learner's lab above (the same flags, ~/work copies made on
# first spawn, never overwritten); jupyter/hub/jupyterhub_config.py says what else can be set.
HUB_PORT ?= 8000
HUB_DIR  ?= artifacts/hub
HUB_STAMP := $(VENV)/.hub-stamp

$(HUB_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,instructor,hub]'
	touch $(HUB_STAMP)

# What make hub can check before it installs anything: root, and that learners can run the Python the
# venv has (or will have): each folder on its real path o+x, as jupyter/hub/jupyterhub_config.py checks.
hub-check:
	@test "$$(id -u)" = 0 || { echo "error: make hub must run as root (each learner's lab runs as their own account)" >&2; exit 2; }
	@py="$${COURSE_HUB_PYTHON:-$$(test -x $(BIN)/python && echo $(BIN)/python || command -v $(PYTHON))}"; \
	$(PYTHON) -c 'import os, sys; r = os.path.realpath(sys.argv[1]); p = [r]; \
	[p.append(os.path.dirname(p[-1])) for _ in range(64) if p[-1] != os.path.dirname(p[-1])]; \
	bad = [d for d in p if not os.stat(d).st_mode & 1]; \
	bad and sys.exit(f"error: learners cannot run {sys.argv[1]} (it is {r}; {bad[-1]} is not o+x): build .venv with a " \
	"Python outside /root (make clean; make hub PYTHON=/usr/bin/python3), or set COURSE_HUB_PYTHON")' "$$py"

hub: hub-check
	@$(MAKE) --no-print-directory $(HUB_STAMP)
	@mkdir -p $(HUB_DIR) && chmod 711 $(HUB_DIR)
	cd $(HUB_DIR) && COURSE_REPO=$(CURDIR) COURSE_HUB_DIR=$(abspath $(HUB_DIR)) COURSE_HUB_PORT=$(HUB_PORT) \
		COURSE_LEARNER_FLAGS='$(LEARNER_FLAGS)' COURSE_LEARNER_URL=$(LEARNER_URL) \
		$(abspath $(BIN))/jupyterhub -f $(CURDIR)/jupyter/hub/jupyterhub_config.py

# Start one chapter again: make reset-notebook NB=01_pcie. NB must be a chapter of course.toml (its
# number_slug), nothing else: no path, so nothing outside work/ is ever moved. The old copy is kept as
# work/NB.ipynb.bak, or .bak.1, .bak.2, ... when that is taken: a backup is never overwritten.
CHAPTERS := $(shell awk -F'"' '/^number *=/ {n = $$2} /^slug *=/ {print n "_" $$2}' course.toml)
NB_CHAPTER = $(if $(filter 1,$(words $(NB))),$(filter $(CHAPTERS),$(NB)))
NB_QUOTED = '$(subst ','\'',$(NB))'

reset-notebook:
	@$(if $(NB_CHAPTER),true,echo 'error: NB must be one of the chapters in course.toml: $(CHAPTERS); got '$(NB_QUOTED) >&2; exit 2)
	@mkdir -p "$(WORK)"
	@set -e; old="$(WORK)/$(NB_CHAPTER).ipynb"; \
	if test -e "$$old" || test -L "$$old"; then \
		bak="$$old.bak"; n=0; \
		while test -e "$$bak" || test -L "$$bak"; do n=$$((n + 1)); bak="$$old.bak.$$n"; done; \
		mv -n "$$old" "$$bak"; test ! -e "$$old"; echo "kept your old copy as $$bak"; \
	fi; \
	cp "notebooks/$(NB_CHAPTER).ipynb" "$(WORK)/" && echo "$$old is a fresh copy of notebooks/$(NB_CHAPTER).ipynb"

# Chromium for the browser test is a system package: installed only when asked (make browser-deps) or
# in CI (CI=true, as CI services and .ci/run set it). Without it the browser test skips and says how.
browser-deps:
	bash scripts/ensure_chromium.sh

test: $(HUB_STAMP) $(if $(filter true 1,$(CI)),browser-deps)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile

# Every test but the browser test and the end-to-end ones marked slow (instructor, autograde, the lab's
# make targets, export: 589 s between them on 2 cores): the loop while editing. `make test` runs them all.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile -m "not browser and not slow" tests

# Rebuild solutions/*.ipynb and notebooks/*.ipynb from solutions/src/*.py.
notebooks: $(STAMP)
	$(BIN)/python -m course_lib.authoring build

# work/ holds the learner's notebooks: clean never removes it.
clean:
	rm -rf $(VENV) artifacts .pytest_cache
