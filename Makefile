# magnetar: the two set-up commands are `make standalone` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# the browser of the console's end-to-end tests: Debian's chromium (Playwright never downloads one)
CHROMIUM ?= /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: standalone test lint bench clean reference go-client-suite python-client-suite scale-out-reference

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

## start a standalone broker with local storage in ./data (ports 6650 and 8080)
standalone: $(STAMP)
	$(VENV)/bin/magnetar standalone --data-dir ./data

$(CHROMIUM):
	$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium

## run the whole test suite
test: $(STAMP) $(CHROMIUM)
	$(PY) -m pytest tests

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks examples tools

## the peer suite: installs and starts Redis, NATS, RabbitMQ, pulsar-lite, Apache Pulsar and magnetar on
## 127.0.0.1 and runs them side by side (BENCH_ARGS=--quick: a smoke run); benchmarks/README.md
bench: $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) -m benchmarks.suite $(BENCH_ARGS)

PULSAR_CLIENT_GO ?= /work/.mirror/apache+pulsar-client-go/repo
PULSAR_CLIENT_PYTHON ?= /work/.mirror/apache+pulsar-client-python/repo

## Apache Pulsar (from Maven Central) as the reference for tests/interop (heavy, not in CI): docs/REFERENCE.md
reference: $(STAMP)
	tools/pulsar-reference.sh --go-suite $(PULSAR_CLIENT_GO)

## pulsar-client-go's own pulsar/ tests against magnetar (PULSAR_CLIENT_GO: a git dir of apache/pulsar-client-go)
go-client-suite: $(STAMP)
	tools/go-client-suite.sh $(PULSAR_CLIENT_GO)

## pulsar-client-python's own tests with magnetar.client in the official client's place (PULSAR_CLIENT_PYTHON: its git dir)
python-client-suite: $(STAMP)
	$(PY) tools/python_client_suite.py $(PULSAR_CLIENT_PYTHON) --secure

## geo-replication magnetar <-> Apache Pulsar standalone (heavy, not in CI): results in docs/SCALE-OUT.md
scale-out-reference: $(STAMP)
	$(PY) tools/scale_out_reference.py

clean:
	rm -rf $(VENV) data build *.egg-info
