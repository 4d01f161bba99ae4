# swdt build, test and release targets. `make help` lists them.

GO      ?= go
BIN     ?= bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w \
	-X sigs.k8s.io/swdt/cmd/swdt/app.version=$(VERSION) \
	-X sigs.k8s.io/swdt/cmd/swdt/app.commit=$(COMMIT)
GOBUILD := $(GO) build -trimpath -ldflags '$(LDFLAGS)'
# Extra flags for go test, for example GOTESTFLAGS=-race.
GOTESTFLAGS ?=
# deepcopy-gen is pinned to the apimachinery version in go.mod.
K8S_VERSION = $(shell $(GO) list -m -f '{{.Version}}' k8s.io/apimachinery)

.PHONY: all help build test test-go cross lint generate clean bench demo images

all: build

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build every command in cmd/ into bin/
	$(GOBUILD) -o $(BIN)/ ./cmd/...

test: test-go ## run the whole test suite

test-go: ## go vet and go test ./...
	$(GO) vet ./...
	$(GO) test $(GOTESTFLAGS) ./...

cross: ## build swdt for windows/amd64 and darwin/arm64 into bin/
	GOOS=windows GOARCH=amd64 $(GOBUILD) -o $(BIN)/swdt-windows-amd64.exe ./cmd/swdt
	GOOS=darwin GOARCH=arm64 $(GOBUILD) -o $(BIN)/swdt-darwin-arm64 ./cmd/swdt

lint: ## gofmt (must list nothing) and go vet
	@out="$$(find . -name '*.go' -not -path '*/node_modules/*' -not -path '*/testdata/*' -not -path './.cache/*' | xargs gofmt -l)"; \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

generate: ## regenerate deep-copy functions of the Node API
	$(GO) run k8s.io/code-generator/cmd/deepcopy-gen@$(K8S_VERSION) \
		--go-header-file /dev/null --output-file zz_generated.deepcopy.go \
		./apis/config/v1alpha1

bench: build ## measure swdt kubernetes against OpenSSH sftp on loopback simnodes (docs/benchmarks.md)
	$(GO) run ./bench -swdt $(BIN)/swdt -simnode $(BIN)/simnode

demo: build ## run every swdt command against a simulated Windows node (simnode) on loopback
	$(GO) run ./hack/demo -swdt $(BIN)/swdt -simnode $(BIN)/simnode -go $(GO)

images: build ## record images/demo.txt from a real make demo run; render it and images/architecture.dot (installs graphviz when missing)
	@command -v dot >/dev/null || { sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y --no-install-recommends graphviz; }
	{ echo '$$ make demo'; NO_COLOR=1 $(GO) run ./hack/demo -swdt $(BIN)/swdt -simnode $(BIN)/simnode -go $(GO) 2>&1; } > images/demo.txt
	awk -f images/terminal.awk images/demo.txt | dot -Tsvg -o images/demo.svg
	awk -f images/terminal.awk images/demo.txt | dot -Tpng -o images/demo.png
	dot -Tsvg images/architecture.dot -o images/architecture.svg
	dot -Tpng -Gdpi=96 images/architecture.dot -o images/architecture.png

clean: ## remove build output
	rm -rf $(BIN)
