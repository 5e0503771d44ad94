# tbhost: `make test` is the whole suite (unit tests, then the VM lab with real
# LVM and device-mapper); it installs what it needs first.
GO        ?= go
LAB_TIMEOUT ?= 80m

.PHONY: all build test deps unit lab-test bench example clean

all: build

# statically linked (no cgo anywhere): the same binary runs on the host and
# inside the VM lab's busybox guest (tbhost lab run --tbhost bin/tbhost)
build:
	CGO_ENABLED=0 $(GO) build -o bin/tbhost ./cmd/tbhost

example:
	$(GO) run ./cmd/tbhost lvm plan --example

test: deps unit lab-test

deps:
	./.ci/install-deps

unit:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

# Real LVM RAID + dm-integrity inside qemu; scenarios are batched into few boots.
# -p 1: internal/lab and internal/lab/rehearse boot one VM at a time.
lab-test:
	$(GO) test -tags lab -count=1 -p 1 -timeout $(LAB_TIMEOUT) -v ./internal/lab/...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin lab-test.log
