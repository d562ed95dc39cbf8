# sysprof — see README.md. `make demo` shows the main job; `make test` runs the tests.
GO       ?= go
BIN      := bin/sysprof
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
# Pure-Go packages get the race detector; the rest run once without it (BPF and namespaces).
RACE_PKGS := ./policy/... ./synth/... ./report/... ./diffreport/... ./trace/...

.PHONY: all build build-arm64 cross test test-arm64 vet fmt-check generate check-generate bench demo clean dogfood dogfood-learn

all: build

# The init stage program (cmd/sysprof-init) is built first and embedded (scripts/build.sh).
build:
	GO='$(GO)' ./scripts/build.sh $(BIN) '$(LDFLAGS)'

# An arm64 binary (its init stage program too): `GOARCH=arm64 make build` does the same into bin/sysprof.
build-arm64:
	GOARCH=arm64 GO='$(GO)' ./scripts/build.sh $(BIN)-arm64 '$(LDFLAGS)'

vet:
	$(GO) vet ./...

# The whole tree builds and vets for the other architecture (no clang: the eBPF objects of both
# are committed), so that an amd64-only change never reaches main. ~40 s cold, ~2 s warm.
CROSS_ARCH := $(if $(filter arm64,$(shell $(GO) env GOARCH)),amd64,arm64)
cross:
	GOARCH=$(CROSS_ARCH) $(GO) build ./...
	GOARCH=$(CROSS_ARCH) $(GO) vet ./...

# The pure-Go packages' tests, built for arm64 and run under qemu-user (Debian's qemu-user,
# .ci/run): the arm64 eBPF objects' shared struct sizes, the syscall tables, the seccomp compiler
# and its VM, synthesis and the paths on the other architecture. policy's TestConcurrentLearnsProcesses re-executes its test binary, which
# the kernel cannot exec without binfmt_misc.
ARM64_PKGS := ./bpf/ ./policy/... ./seccomp/... ./synth/... ./paths/...
test-arm64:
	@if [ "$$($(GO) env GOARCH)" = arm64 ]; then echo "test-arm64: this is arm64: make test runs them natively"; \
	elif ! command -v qemu-aarch64 >/dev/null; then echo "test-arm64: qemu-aarch64 is missing (apt-get install qemu-user)"; exit 1; \
	else GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64 -skip TestConcurrentLearnsProcesses $(ARM64_PKGS); fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_bpfel.go$$')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The BPF, namespace and seccomp tests, the demo and the bench need root: these targets re-run
# their commands under sudo when you are not root (scripts/asroot.sh), or say how to run them.
ASROOT := ./scripts/asroot.sh

test: build vet fmt-check cross
	$(ASROOT) "make test" $(GO) test -count=1 -timeout 60m ./...
	$(GO) test -count=1 -race $(RACE_PKGS)
	$(MAKE) test-arm64

# Regenerates the eBPF objects (needs Debian's clang, llvm, libbpf-dev and bpftool).
generate:
	$(GO) generate ./bpf/...

# Fails when the committed eBPF objects differ from what the C sources generate.
check-generate: generate
	git diff --exit-code -- bpf/

bench: build
	$(ASROOT) "make bench" ./scripts/bench.sh

demo: build
	$(ASROOT) "make demo" ./scripts/demo.sh

clean:
	rm -rf bin

# Dogfooding: our own C fixture build must not start doing anything its committed profile does
# not allow. CI runs this after the tests; refresh the profile with `make dogfood-learn`.
DOGFOOD_ENV := env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS
dogfood: build
	cd testdata/projects/cproj && $(MAKE) -s clean && \
	  $(DOGFOOD_ENV) ../../../$(BIN) drift -p ../../../.ci/profiles/cproj-make.yaml -- make; \
	  status=$$?; $(MAKE) -s clean; exit $$status

dogfood-learn: build
	cd testdata/projects/cproj && $(MAKE) -s clean && \
	  $(DOGFOOD_ENV) ../../../$(BIN) learn --fresh -p ../../../.ci/profiles/cproj-make.yaml -- make; \
	  status=$$?; $(MAKE) -s clean; exit $$status
