# Entry points (see README): `make demo`, `make test`, `make test-fast`. All create .venv on first use
# and install everything pinned in requirements.lock (torch and Ray included).
PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed-stamp
FAST := not slow and not backend and not browser

.PHONY: demo table test test-fast lint-imports browser clean

$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check pip==26.3 setuptools==84.2.1 wheel==0.48.0
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@echo "compiling the policies' numba kernels once (cached beside the sources; about 35 s of CPU)"
	$(VENV)/bin/ringsched compare --trace demo:200 --cluster 16x8 --policies gadget,oasis,pollux,sia \
		--out $(VENV)/kernel-warm-up > /dev/null
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ringsched demo

table: $(STAMP)
	$(VENV)/bin/ringsched model table

# The layer contracts of pyproject.toml ([tool.importlinter]); tests/test_layers.py runs them too.
lint-imports: $(STAMP)
	$(VENV)/bin/lint-imports

# The full suite: every test, the slow, backend and browser ones included. The real-process
# chaos run (tests/test_faults_real.py) runs in a pytest process of its own: after the rest of
# the suite in one process it left orphaned workers running past its wait (not understood yet).
test: $(STAMP) lint-imports
	$(VENV)/bin/python -m pytest --ignore=tests/test_faults_real.py
	$(VENV)/bin/python -m pytest tests/test_faults_real.py

# Everything but the tests marked slow, backend or browser (pyproject.toml lists the markers).
test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -m "$(FAST)"

# Chromium for tests/test_report_browser.py (Debian's package; needs root). CI runs it before `make test`.
browser:
	sh scripts/install_chromium.sh

clean:
	rm -rf $(VENV) build src/*.egg-info
