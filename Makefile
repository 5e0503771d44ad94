# tbhost: `make test` is the whole suite (unit tests, then the VM lab with real
# LVM and device-mapper); it installs what it needs first.
GO        ?= go
LAB_TIMEOUT ?= 80m

.PHONY: all build deb deb-test test deps unit lab-test bench bench-all example clean

all: build

# version and commit stamped into the binary (tbhost --version) and the
# package: a Debian version from git describe (0.0~git<date>.<sha> before
# the first vX.Y.Z tag), 0.0~~unknown without git.
VERSION := $(shell $(GO) run ./cmd/mkdeb version 2>/dev/null || echo 0.0~~unknown)
COMMIT  := $(shell $(GO) run ./cmd/mkdeb commit 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)

# statically linked (no cgo anywhere): the same binary runs on the host and
# inside the VM lab's busybox guest (tbhost lab run --tbhost bin/tbhost)
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/tbhost ./cmd/tbhost

# dist/tbhost_<version>_amd64.deb, built with nfpm as a library (docs/packaging.md)
deb: build
	$(GO) run ./cmd/mkdeb build --binary bin/tbhost --out dist

# install the package into a throwaway root with dpkg, check it, remove it
# and purge it (skips with a reason without dpkg or root); part of make test
deb-test: deb
	TBHOST_DEB=$(CURDIR)/dist/tbhost_$(VERSION)_amd64.deb $(GO) test -count=1 -run 'TestInstalled' -v ./internal/pkgbuild/

example:
	$(GO) run ./cmd/tbhost lvm plan --example

test: deps unit deb-test lab-test

deps:
	./.ci/install-deps

unit:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

# Real LVM RAID + dm-integrity inside qemu; scenarios are batched into few boots.
# -p 1: internal/lab and internal/lab/rehearse boot one VM at a time, but for
# the four boot-end tests of the harness (a sleeping or hung guest, see
# sleeperConfig in internal/lab/kill_lab_test.go): -parallel 4 runs them together.
lab-test:
	$(GO) test -tags lab -count=1 -p 1 -parallel 4 -timeout $(LAB_TIMEOUT) -v ./internal/lab/...

# Issue 16's ratios against rival tools on the same bytes, files and
# connections, each the median of 5 alternating pairs (docs/performance.md
# has the latest figures): extract/cp, verify/sha256sum, probe/fio (p50,
# p99, p99.9; pread and mmap; warm and cold), replay/wrk (rate, p50, p99;
# keep-alive and python3 -m http.server; replay/h2load beside it, the third
# client that arbitrates the p99). Cold runs drop the page cache
# (root only; they skip otherwise); a missing fio, wrk or python3 is a skip
# that names it (make deps installs fio, wrk, h2load and gcc, for the C floor loop of the probe comparison). Takes ~7.5 minutes on the 2-CPU test machine.
bench:
	@$(GO) test -count=1 -run '^$$' -bench 'Ratio' -benchtime 1x -timeout 60m ./prefix/ ./internal/bench/ > bench.log 2>&1; rc=$$?; \
	grep -E 'RATIO|pairs (probe|replay)|listen drops|tail probe|cpu probe|clock probe|baseline fio|floor probe|not installed|need root|FAIL|panic' bench.log | sed 's/^ *[a-z_]*_test.go:[0-9]*: //'; \
	echo "(full output: bench.log)"; exit $$rc

# every Go benchmark of the repository (ns/op, allocations, the older same-run baselines)
bench-all:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin dist lab-test.log bench.log
