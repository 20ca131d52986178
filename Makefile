# shortlink: the few targets a newcomer needs. Recipes call scripts/ or cargo.
PORT ?= 8080
export PORT

.PHONY: deps build test unit api-contract e2e lint demo demo-cluster pg-cluster stop clean module module-debian e2e-debian deb deb-test bench bench-smoke scale-figures fuzz fuzz-smoke screenshots

## Check the Rust toolchain and install the Debian packages the build, the
## demo and the tests need (idempotent). Targets that need less install
## only their groups (scripts/deps.sh build|demo|test|bench|browser).
deps:
	@scripts/deps.sh

## Release build: build/sbin/nginx, build/modules/ngx_http_shortlink_module.so, build/bin/shortlinkd.
build:
	@scripts/deps.sh build
	@scripts/build.sh

## Everything: formatting, clippy, unit tests, the end-to-end suite (vendored
## and Debian's nginx) and the Debian packages installed and serving.
test: deps build lint unit api-contract e2e e2e-debian deb-test bench-smoke fuzz-smoke

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	python3 scripts/import-circles.py core/src daemon/src nginx-module/src

## Unit and daemon tests; then the daemon's whole suite again with every
## test daemon on a private PostgreSQL (testpg's with-pg), so each behaviour
## holds on both stores.
unit:
	cargo test --workspace --exclude shortlink-e2e
	cargo build -p shortlink-testpg --bin with-pg
	target/debug/with-pg cargo test --workspace --exclude shortlink-e2e --test '*'

## The API against its OpenAPI document: schemathesis, every check, on a
## throwaway daemon (scripts/schemathesis.toml names the allowed refusals).
api-contract: deps build
	@scripts/api-contract.sh

# --no-fail-fast: a failing file (the fault suite, say) does not hide the others.
e2e: deps build
	cargo test --release -p shortlink-e2e --no-fail-fast -- --test-threads=2

## The module for an nginx you already run, from its configured source tree
## (./configure with that binary's `nginx -V` arguments and --with-compat):
##   make module NGINX_SRC=/path/to/nginx-1.x.y   ->  build/module/ngx_http_shortlink_module.so
module:
	@scripts/deps.sh build
	@scripts/module.sh "$(NGINX_SRC)"

## The module for Debian's own nginx (/usr/sbin/nginx, packages nginx-core and
## nginx-dev, installed if missing)  ->  build/debian/ngx_http_shortlink_module.so
module-debian:
	@scripts/deps.sh build
	@scripts/debian-nginx.sh

## The end-to-end suite against Debian's /usr/sbin/nginx and that module.
e2e-debian: deps build module-debian
	SHORTLINK_NGINX=/usr/sbin/nginx SHORTLINK_MODULE=$(CURDIR)/build/debian/ngx_http_shortlink_module.so \
	  cargo test --release -p shortlink-e2e --no-fail-fast -- --test-threads=2

## Debian 12 packages into build/deb/: shortlinkd (daemon, unit, config, user,
## directories, key) and libnginx-mod-http-shortlink (for Debian's nginx).
deb: build module-debian
	@scripts/deb.sh

## Installs both packages on this machine (as root; CI's machine is a
## throwaway), serves a link through them with /usr/sbin/nginx, then purges.
deb-test: deb
	@scripts/deps.sh demo
	@scripts/deb-test.sh

## The admin UI's screenshots in docs/screenshots/: every page at 390 and
## 1366 px wide (NAME-390.png, NAME-1366.png) and the ones the docs show,
## taken by the admin UI's browser tests in Chromium.
screenshots: build
	@scripts/deps.sh browser
	SHORTLINK_SCREENSHOTS=$(CURDIR)/docs/screenshots \
	  cargo test --release -p shortlink-e2e --test admin_ui -- --test-threads=1

## Every core/fuzz target for FUZZ_RUNS executions (default 10 million each).
FUZZ_RUNS ?= 10000000
fuzz:
	scripts/fuzz.sh runs $(FUZZ_RUNS)

## Every core/fuzz target for 20 s: part of make test.
fuzz-smoke:
	scripts/fuzz.sh smoke 20

## testpg's pg-cluster (start/stop a private PostgreSQL that outlives the
## command): target/release/pg-cluster, for demo-cluster and the benchmarks.
pg-cluster:
	cargo build --release -q -p shortlink-testpg --bin pg-cluster

## Benchmarks against nginx's own `return 302`, and the store-bound ones on
## SQLite and on PostgreSQL: bench/results.json and BENCHMARKS.md.
bench: deps build pg-cluster
	python3 bench/bench.py

## A few seconds of every benchmark scenario, and the floor examples on a
## few thousand rows: keeps the harness from rotting.
bench-smoke: deps build pg-cluster
	python3 bench/bench.py --smoke
	cargo run --release -q --example sqlite_floor -- 2000 1 500
	cargo run --release -q --example click_floor -- 2000 20000 1

## What a link and a click cost in PostgreSQL (bytes per link, click rows
## per link-hour, bytes per row), measured through the real daemon and
## nginx on a private PostgreSQL: bench/results-scale.json and BENCHMARKS.md's
## "Sizes on PostgreSQL", the figures docs/SCALE.md starts from (2 minutes).
scale-figures: deps build pg-cluster
	python3 bench/scale_figures.py --write

## Start the product on 127.0.0.1:$(PORT) in the background; `make stop` stops it.
demo: build
	@scripts/deps.sh demo
	@scripts/demo.sh

## Two nodes (nginx + module + shortlinkd each) on one private PostgreSQL,
## on 127.0.0.1:$(PORT) and the next port; `make stop` stops them.
demo-cluster: build pg-cluster
	@scripts/deps.sh demo cluster
	@scripts/demo-cluster.sh

## Stops whichever of demo and demo-cluster is running.
stop:
	@scripts/demo.sh stop
	@scripts/demo-cluster.sh stop

clean:
	cargo clean
	rm -rf build var
