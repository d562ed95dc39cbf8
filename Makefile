# sysprof — see README.md. `make demo` shows the main job; `make test` runs the tests.
GO       ?= go
BIN      := bin/sysprof
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
# Pure-Go packages get the race detector; the rest run once without it (BPF and namespaces).
RACE_PKGS := ./policy/... ./synth/... ./report/... ./diffreport/... ./trace/...

.PHONY: all build test vet fmt-check generate check-generate bench demo clean dogfood dogfood-learn

all: build

# The init stage program (cmd/sysprof-init) is built first and embedded (scripts/build.sh).
build:
	GO='$(GO)' ./scripts/build.sh $(BIN) '$(LDFLAGS)'

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_bpfel.go$$')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The BPF, namespace and seccomp tests, the demo and the bench need root: these targets re-run
# their commands under sudo when you are not root (scripts/asroot.sh), or say how to run them.
ASROOT := ./scripts/asroot.sh

test: build vet fmt-check
	$(ASROOT) "make test" $(GO) test -count=1 -timeout 60m ./...
	$(GO) test -count=1 -race $(RACE_PKGS)

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
