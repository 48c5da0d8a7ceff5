# magnetar: the two set-up commands are `make standalone` and `make test`; `make` alone lists the targets.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# what the broker needs (`pip install -e .`), and the test extras on top of it: one stamp each,
# so `make standalone` never waits for pyspark or playwright
BROKER_STAMP := $(VENV)/.installed-broker
TEST_STAMP := $(VENV)/.installed-test
# the browser of the console's end-to-end tests: Debian's chromium (Playwright never downloads one)
CHROMIUM ?= /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.DEFAULT_GOAL := help
.PHONY: help standalone test lint bench clean reference go-client-suite python-client-suite dist scale-out-reference pulsar-admin-table stats-compare spark-cluster-test replicated-subscriptions-reference

## list the targets (this text)
help:
	@echo "magnetar: make TARGET"
	@echo
	@awk '/^## /{doc = doc (doc == "" ? "" : " ") substr($$0, 4); next} \
	     /^[a-z][a-z-]*:/ && doc != "" {split($$0, t, ":"); n = split(doc, w, " "); line = sprintf("  %-20s", t[1]); \
	       for (i = 1; i <= n; i++) {if (length(line) + length(w[i]) > 79) {print line; line = sprintf("%22s", "")} line = line " " w[i]} \
	       print line} {doc = ""}' $(MAKEFILE_LIST)
	@echo
	@echo "After 'make standalone': '. $(VENV)/bin/activate' puts magnetar on your PATH."

$(BROKER_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $(BROKER_STAMP)

$(TEST_STAMP): $(BROKER_STAMP) pyproject.toml
	$(PY) -m pip install -q -e '.[test]'
	touch $(TEST_STAMP)

## start a standalone broker with local storage in ./data (ports 6650 and 8080); installs only what it needs
standalone: $(BROKER_STAMP)
	@echo "magnetar: in another shell, '. $(VENV)/bin/activate' puts the magnetar command on your PATH"
	$(VENV)/bin/magnetar standalone --data-dir ./data

$(CHROMIUM):
	$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium

## run the whole test suite (adds the test extras to .venv)
test: $(TEST_STAMP) $(CHROMIUM)
	$(PY) -m pytest tests

## ruff over the sources, tests, benchmarks, examples and tools
lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check src tests benchmarks examples tools

## build the wheel and the sdist into dist/
dist: $(TEST_STAMP)
	$(PY) -m build --outdir dist .

## the peer suite: installs and starts Redis, NATS, RabbitMQ, pulsar-lite, Apache Pulsar and magnetar on
## 127.0.0.1 and runs them side by side (BENCH_ARGS=--quick: a smoke run); benchmarks/README.md
bench: $(TEST_STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) -m benchmarks.suite $(BENCH_ARGS)

PULSAR_CLIENT_GO ?= /work/.mirror/apache+pulsar-client-go/repo
PULSAR_CLIENT_PYTHON ?= /work/.mirror/apache+pulsar-client-python/repo

## Apache Pulsar (from Maven Central) as the reference for tests/interop (heavy, not in CI): docs/REFERENCE.md
reference: $(TEST_STAMP)
	tools/pulsar-reference.sh --go-suite $(PULSAR_CLIENT_GO)

## pulsar-client-go's own pulsar/ tests against magnetar (PULSAR_CLIENT_GO: a git dir of apache/pulsar-client-go)
go-client-suite: $(TEST_STAMP)
	tools/go-client-suite.sh $(PULSAR_CLIENT_GO)

## pulsar-client-python's own tests with magnetar.client in the official client's place (PULSAR_CLIENT_PYTHON: its git dir)
python-client-suite: $(TEST_STAMP)
	$(PY) tools/python_client_suite.py $(PULSAR_CLIENT_PYTHON) --secure

## geo-replication magnetar <-> Apache Pulsar standalone (heavy, not in CI): results in docs/SCALE-OUT.md
scale-out-reference: $(TEST_STAMP)
	$(PY) tools/scale_out_reference.py

## the real pulsar-admin (Maven Central) verb by verb on magnetar and on Apache Pulsar (the lib dir `make reference`
## assembled; heavy, not in CI): table in docs/PULSAR-ADMIN.md
pulsar-admin-table: $(TEST_STAMP)
	PYTHONPATH=src $(PY) tools/pulsar_admin_table.py $(ADMIN_TABLE_ARGS)

## topic, subscription and internal stats field by field on magnetar and on Apache Pulsar standalone (the lib dir
## `make reference` assembled; a JVM, not in CI): table in docs/STATS.md
stats-compare: $(TEST_STAMP)
	PYTHONPATH=src $(PY) tools/stats_compare.py

## remove .venv, ./data and the build outputs
clean:
	rm -rf $(VENV) data build dist *.egg-info

## the Spark connector on a Spark standalone cluster (a master, 2 workers) against magnetar and Apache Pulsar
## (heavy, not in CI): results in docs/SCALE-OUT.md
spark-cluster-test: $(TEST_STAMP)
	$(PY) tools/spark_cluster.py

## replicated subscriptions magnetar <-> Apache Pulsar standalone, both ways (heavy, not in CI): results in docs/SCALE-OUT.md
replicated-subscriptions-reference: $(TEST_STAMP)
	$(PY) tools/replicated_subscriptions_reference.py
