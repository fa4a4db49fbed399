# The task runner. `make test` is what CI runs (via .ci/run); lint also runs inside
# the test suite (tests/test_layout.py).
PY ?= .venv/bin/python

.PHONY: test lint golden

test:
	$(PY) -m pytest

lint:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

# rewrite tests/golden/ from the current behaviour; review the diff before committing
golden:
	OCB_UPDATE_GOLDEN=1 $(PY) -m pytest -n0 tests/ocb/cli/test_app.py
