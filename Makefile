# Two commands on a fresh machine with Python 3.11 and make:
#   make demo   build the course and grade the sample class end to end
#   make test   run the whole test suite
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# nbgrader runs `alembic` from PATH: the venv's bin goes first.
export PATH := $(CURDIR)/$(BIN):$(PATH)
export MPLBACKEND := Agg
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: demo test build verify-build install wheel clean sysdeps student-bundle student-lab \
	formgrader

# The grading sandbox runs every kernel under bubblewrap. As root (CI, a grading server)
# it is installed when missing; elsewhere the grader says what it cannot enforce.
sysdeps:
	@if ! command -v bwrap >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing bubblewrap (the grading sandbox)"; \
	    (apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
	     (apt-get update -qq >/dev/null && apt-get install -y -qq bubblewrap >/dev/null)); \
	  else \
	    echo "NOTE: bubblewrap is not installed; grading runs with rlimits only"; \
	  fi; \
	fi

# jupyter-config/: every Jupyter server of the course's environment loads
# coursekit.grading.webguard (formgrader under a Content-Security-Policy).
$(STAMP): pyproject.toml jupyter-config/jupyter_server_config.d/coursekit.json
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[course]"
	install -D -m 644 jupyter-config/jupyter_server_config.d/coursekit.json \
	  $(VENV)/etc/jupyter/jupyter_server_config.d/coursekit.json
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP) sysdeps
	$(BIN)/python -m coursekit.grading demo

# Library and course tests, then every source notebook executed by nbval (pinned cells
# compared with their committed outputs).
test: $(STAMP) sysdeps
	$(BIN)/python -m pytest -q --nbval-lax tests source

# `make build A=04_parallelism_advisor` builds one assignment (several: A="01_x 02_y").
build: $(STAMP)
	$(BIN)/python -m coursekit.grading build $(if $(A),--only $(A))

verify-build: $(STAMP)
	$(BIN)/python -m coursekit.grading verify-build

# The instructor's wheel: the full library (a grading machine). Students get the student
# wheel of `make student-bundle` instead (no implementation of a graded function).
wheel: $(STAMP)
	$(BIN)/python -m pip wheel --quiet --no-deps --no-build-isolation -w dist .

# The student side (DESIGN.md §7): release notebooks and a JupyterLab without instructor
# tools, in dist/student/ (a student's work there is never overwritten).
student-bundle: $(STAMP)
	$(BIN)/python -m coursekit.grading student-bundle dist/student

student-lab: student-bundle
	$(BIN)/python -m coursekit.grading student-lab dist/student

# The instructor's JupyterLab with formgrader, on 127.0.0.1 with a token, from the course
# root (nbgrader_config.py renders every submission inert; coursekit.grading.webguard adds
# formgrader's Content-Security-Policy).
formgrader: $(STAMP)
	$(BIN)/jupyter lab --no-browser --ServerApp.ip=127.0.0.1 \
	  $$( [ "$$(id -u)" = 0 ] && echo --allow-root ) --ServerApp.root_dir=$(CURDIR)

clean:
	rm -rf autograded submitted feedback reports gradebook.db .grading-state.json* test-artifacts \
	  .coursekit-quarantine downloaded grades.csv
