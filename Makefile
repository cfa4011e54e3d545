# tidemark: `make demo` sets everything up and runs the main job; `make test` runs every test.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
export TIDEMARK_LAKE ?= $(CURDIR)/lake
export DBT_SEND_ANONYMOUS_USAGE_STATS ?= false

DEMO_SCENARIO ?= backpressure
DEMO_DATA ?= demo-data
DEMO_REPORT ?= report.html
BENCH_EVENTS ?= 5000000
BENCH_SCALE_SUBTASKS ?= 1000
# test-live-all: its pairs of releases (default: every release of docs/flink-versions.md) and
# where each pair's figures and pytest exit status are gathered.
LIVE_ALL_PAIRS ?= $(shell $(BIN)/python -m tests.live.versions_table pairs 2>/dev/null)
LIVE_ALL_WORK ?= live-all
# Twelve: the first two minutes of a new process build from scratch and compile Spark's code;
# issue 11 asks for ten minutes in a row kept, and the report names the longest such run.
BENCH_SCALE_MINUTES ?= 12
# Spark's class archive (decision 0013), one per Java and pinned PySpark, in .cache/jvm/: `make
# demo` writes it and links the demo lake to it; the tests map the same file (tests/conftest.py
# names it alike, and writes it in the background when no demo has).
# The procedures' sources too: their jar is on the driver's class path, which an archive must match.
JVM_ARCHIVE := $(CURDIR)/.cache/jvm/spark-$(shell { java -version 2>&1; grep '^pyspark==' constraints.txt; cat src/tidemark/spark/java/tidemark/spark/*.java; } | sha256sum | cut -c1-12).jsa

.PHONY: help install chromium demo test test-unit test-live test-live-all test-deep lint format bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

$(BIN)/.installed: pyproject.toml constraints.txt
	@command -v $(PYTHON) >/dev/null || { echo "tidemark needs Python 3.11 ($(PYTHON) not found)"; exit 1; }
	@command -v java >/dev/null || [ -n "$$JAVA_HOME" ] || { echo "tidemark needs Java 17+ for Spark: apt-get install openjdk-17-jre-headless"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	@# uv installs the pinned packages: downloads in parallel, compiles on both cores (these
	@# machines never write bytecode at import, PYTHONDONTWRITEBYTECODE=1); 70 s against pip's 97.
	$(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt uv
	$(BIN)/uv pip install --python $(BIN)/python --quiet --compile-bytecode -c constraints.txt -e ".[dev]"
	@touch $@

install: $(BIN)/.installed  ## create .venv and install tidemark with its pinned dependencies

$(JVM_ARCHIVE): $(BIN)/.installed
	$(BIN)/tidemark jvm-archive --out $@

# Unless TIDEMARK_JVM_ARCHIVE says otherwise, the demo lake's archive is the machine's (a link).
DEMO_ARCHIVE := $(if $(TIDEMARK_JVM_ARCHIVE),,$(JVM_ARCHIVE))
demo: install $(DEMO_ARCHIVE)  ## write Spark's class archive, generate the backpressure scenario, ingest it, dbt build (as a schedule runs it), show a few rows
	$(if $(DEMO_ARCHIVE),mkdir -p $(TIDEMARK_LAKE)/jvm && ln -sfn $(DEMO_ARCHIVE) $(TIDEMARK_LAKE)/jvm/spark-classes.jsa)
	$(BIN)/tidemark generate --scenario $(DEMO_SCENARIO) --out $(DEMO_DATA) --seed 7
	$(BIN)/tidemark ingest $(DEMO_DATA)
	@# Models and data tests, as the README's scheduled commands run them; dbt's unit tests test
	@# the models' code, which `make test` runs (about 1.5 minutes of the demo on two cores).
	$(BIN)/dbt build --exclude-resource-type unit_test
	@echo "--- the lake is at $(TIDEMARK_LAKE)"
	$(BIN)/python -m tidemark.demo --report $(DEMO_REPORT)

# The report's browser test loads the page in Debian's chromium, headless; a fresh machine lacks
# it, so the tests install it where they can (root with apt-get), or say how.
chromium:  ## install Debian's chromium (the report's browser test) when it is missing and apt-get can
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's chromium for the report's browser test"; \
	    apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "the report's browser test needs chromium: sudo apt-get install chromium"; exit 1; \
	  fi; }

test: install capture chromium  ## lint, then every test but the long ones (unit, Spark, end-to-end, capture jar); CI adds test-live and test-deep
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest -m "not deep and not live" -n 2

test-unit: install  ## only the pure Python tests: no Spark, dbt or JVM (seconds)
	$(BIN)/pytest -n 2 tests/unit tests/live/test_matching.py

test-live: install capture  ## only the live tests: a real Flink job (1.15.4 and 2.3.0), captured, ingested, built
	$(BIN)/pytest -m live tests/live

test-live-all: install capture  ## the capture jar's tests and the live tests on every release from Flink 1.15 to 2.3 (about 30 min); the table of docs/flink-versions.md
	@rm -rf $(LIVE_ALL_WORK) && mkdir -p $(LIVE_ALL_WORK)
	@# The capture jar's own tests on every release first (make test: the oldest and newest only).
	@status=0; TIDEMARK_CAPTURE_VERSIONS=$$(echo $(LIVE_ALL_PAIRS) | tr ' ' ',') \
	  $(BIN)/pytest tests/capture || status=1; \
	for pair in $(LIVE_ALL_PAIRS); do \
	  echo "--- live tests on Flink $$pair"; \
	  TIDEMARK_LIVE_VERSIONS=$$pair TIDEMARK_LIVE_FIGURES=$(CURDIR)/$(LIVE_ALL_WORK)/figures.jsonl \
	    $(BIN)/pytest -m live tests/live; code=$$?; \
	  echo "$$pair $$code" >> $(LIVE_ALL_WORK)/status; [ $$code = 0 ] || status=1; \
	done; \
	$(BIN)/python -m tests.live.versions_table table $(LIVE_ALL_WORK)/figures.jsonl \
	  $(LIVE_ALL_WORK)/status docs/flink-versions.md; \
	echo "--- docs/flink-versions.md: $$(cat $(LIVE_ALL_WORK)/status | tr '\n' ';')"; \
	exit $$status

test-deep: install  ## the long property runs (incremental vs full refresh), the gauge reference with window 5, the service's soak (6 cycles, a kill: tests/e2e/test_soak.py), and a Spark standalone cluster against local mode (slow; CI runs it)
	TIDEMARK_PROPERTY_EXAMPLES=$${TIDEMARK_PROPERTY_EXAMPLES:-8} \
	TIDEMARK_WATERMARK_EXAMPLES=$${TIDEMARK_WATERMARK_EXAMPLES:-4} \
	$(BIN)/pytest -m deep -n 2 tests/e2e tests/cluster
	TIDEMARK_REFERENCE_WINDOWS=5 \
	$(BIN)/pytest tests/e2e/test_gauges_reference.py -k gauge_marts_match_a_literal_timer_gauge

lint: install  ## ruff check and format check, and sqlfluff over the dbt SQL (.sqlfluff; about 2 minutes)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/sqlfluff lint models tests/dbt --processes 2

format: install  ## apply ruff's formatting and sqlfluff's fixes (layout; about 10 minutes)
	$(BIN)/ruff format .
	$(BIN)/sqlfluff fix models tests/dbt --processes 2

bench: install  ## benchmarks: ingest, dbt build and the Spark floor on $(BENCH_EVENTS) events; the scheduled path and the service (run --serve); the service's 60-cycle soak with BI clients and a kill (bench/soak.py); a 1,000-subtask job minute by minute (bench/scale.py); nine days under retention (bench/week.py); the capture (long)
	$(BIN)/python bench/run.py --events $(BENCH_EVENTS)
	$(BIN)/python bench/warm.py --work bench-data/warm-$$(date +%s)
	$(BIN)/python bench/serve.py --work bench-data/serve-$$(date +%s)
	$(BIN)/python bench/soak.py --work bench-data/soak-$$(date +%s)
	$(BIN)/python bench/ingest_history.py
	$(BIN)/python bench/scale.py --parallelism $(BENCH_SCALE_SUBTASKS) --minutes $(BENCH_SCALE_MINUTES) --work bench-data/scale-$$(date +%s)
	$(BIN)/python bench/week.py --work bench-data/week-$$(date +%s)
	$(MAKE) capture
	@# issue 45: the oldest and the newest release
	for v in 1.15.4 2.3.0; do \
	  java -cp capture/build/tidemark-capture.jar:$$(ls $$(capture/flink-jars.sh $$v)/flink-dist*.jar) tidemark.capture.Bench || exit 1; \
	  $(BIN)/python bench/capture_throughput.py --flink $$v --pairs 8 || exit 1; \
	done

.PHONY: capture
capture:  ## build capture/build/tidemark-capture.jar (Flink metric reporter + Java agent; needs a JDK)
	capture/build.sh

clean:  ## remove the demo lake, generated data and dbt's output (keeps .venv)
	rm -rf lake demo-data bench-data target logs live-all
