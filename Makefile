# shortlink: the few targets a newcomer needs. Recipes call scripts/ or cargo.
PORT ?= 8080
export PORT

.PHONY: deps build test unit e2e lint demo stop clean module module-debian e2e-debian bench bench-smoke

## Install the Debian packages the build and tests need (idempotent).
deps:
	@scripts/deps.sh

## Release build: build/sbin/nginx, build/modules/ngx_http_shortlink_module.so, build/bin/shortlinkd.
build: deps
	@scripts/build.sh

## Everything: formatting, clippy, unit tests and the end-to-end suite.
test: build lint unit e2e e2e-debian bench-smoke

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

unit:
	cargo test --workspace --exclude shortlink-e2e

e2e: build
	cargo test --release -p shortlink-e2e -- --test-threads=2

## The module for an nginx you already run, from its configured source tree
## (./configure with that binary's `nginx -V` arguments and --with-compat):
##   make module NGINX_SRC=/path/to/nginx-1.x.y   ->  build/module/ngx_http_shortlink_module.so
module: deps
	@scripts/module.sh "$(NGINX_SRC)"

## The module for Debian's own nginx (/usr/sbin/nginx, packages nginx-core and
## nginx-dev, installed if missing)  ->  build/debian/ngx_http_shortlink_module.so
module-debian: deps
	@scripts/debian-nginx.sh

## The end-to-end suite against Debian's /usr/sbin/nginx and that module.
e2e-debian: build module-debian
	SHORTLINK_NGINX=/usr/sbin/nginx SHORTLINK_MODULE=$(CURDIR)/build/debian/ngx_http_shortlink_module.so \
	  cargo test --release -p shortlink-e2e -- --test-threads=2

## Benchmarks against nginx's own `return 302`: bench/results.json and BENCHMARKS.md.
bench: build
	python3 bench/bench.py

## A few seconds of every benchmark scenario: keeps the harness from rotting.
bench-smoke: build
	python3 bench/bench.py --smoke

## Start the product on 127.0.0.1:$(PORT) in the background; `make stop` stops it.
demo: build
	@scripts/demo.sh

stop:
	@scripts/demo.sh stop

clean:
	cargo clean
	rm -rf build var
