# Two entry points (see README): `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed-stamp

.PHONY: demo table test clean

$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check pip==26.3 setuptools==84.2.1 wheel==0.48.0
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ringsched compare --trace synthetic:1000 --cluster 16x8 --policies all --out results/demo

table: $(STAMP)
	$(VENV)/bin/ringsched demo

test: $(STAMP)
	sh scripts/install_chromium.sh
	$(VENV)/bin/python -m pytest

clean:
	rm -rf $(VENV) build src/*.egg-info
