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

# swdt embeds the agent binaries it uploads to nodes (pkg/agentbin).
AGENT_DIR := pkg/agentbin/dist
AGENT_LDFLAGS := -s -w

# The cluster test tier (internal/clustertest) runs the control plane of the
# Kubernetes release hack/cluster/go.mod pins, built once into the user cache.
CLUSTER_K8S   := $(shell sed -n 's/^[[:space:]]*k8s.io\/kubernetes \(v[^ ]*\)$$/\1/p' hack/cluster/go.mod)
CLUSTER_BIN   ?= $(or $(SWDT_CLUSTER_BIN),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/swdt/cluster/$(CLUSTER_K8S)/bin)
CLUSTER_MINOR := $(word 2,$(subst ., ,$(CLUSTER_K8S)))
# The version stamp of the Wine tier's second kubelet.exe: a local build's.
CLUSTER_DEV   := $(CLUSTER_K8S)-1+0123456789abcd
cluster_ldflags = -s -w $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(1) -X $(p).gitMajor=1 -X $(p).gitMinor=$(CLUSTER_MINOR) \
	-X $(p).gitTreeState=clean -X $(p).gitCommit=0000000000000000000000000000000000000000)
CLUSTER_LDFLAGS := $(call cluster_ldflags,$(CLUSTER_K8S))

.PHONY: all help agent build release test test-deps test-go test-race test-cluster cluster-bins cross lint generate schema clean bench demo images

all: build

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

agent: ## build swdt-agent for windows/amd64 and windows/arm64 into pkg/agentbin/dist (swdt embeds them and their digests)
	GOOS=windows GOARCH=amd64 $(GO) build -trimpath -ldflags '$(AGENT_LDFLAGS)' -o $(AGENT_DIR)/swdt-agent-windows-amd64.exe ./cmd/swdt-agent
	GOOS=windows GOARCH=arm64 $(GO) build -trimpath -ldflags '$(AGENT_LDFLAGS)' -o $(AGENT_DIR)/swdt-agent-windows-arm64.exe ./cmd/swdt-agent
	$(GO) run ./pkg/agentbin/digest $(AGENT_DIR)/swdt-agent-windows-amd64.exe $(AGENT_DIR)/swdt-agent-windows-arm64.exe

build: agent ## build every command in cmd/ into bin/ (the agent first: swdt embeds it)
	$(GOBUILD) -o $(BIN)/ ./cmd/swdt ./cmd/simnode

# The platforms make release builds swdt for.
RELEASE_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64

release: agent ## build swdt $(VERSION) for linux, darwin and windows (amd64, arm64), the agent embedded, as archives with SHA256SUMS in dist/
	@rm -rf dist && mkdir -p dist
	@set -e; for p in $(RELEASE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; exe=swdt; [ $$os = windows ] && exe=swdt.exe; \
		echo "building swdt $(VERSION) for $$os/$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GOBUILD) -o dist/swdt-$(VERSION)-$$os-$$arch/$$exe ./cmd/swdt; \
	done
	$(GO) run ./hack/release -dir dist -readme README.md
	@cat dist/SHA256SUMS

test: test-deps agent cluster-bins test-go ## run the whole test suite (installs its tools when missing; the first run builds the control plane, see docs/join.md)

# What the tests need beyond Go: OpenSSH's sshd, ssh and sftp (real-server
# tests), libvirtd (pkg/vm and swdt vm against libvirt's test driver; the
# tests run it in session mode, so libvirt-daemon-system is not needed) and
# Node.js with pscheck's pinned npm packages (PowerShell grammar check);
# rsync for make bench's rsync rows; Debian's etcd-server for the cluster
# tier, and iproute2 for its separate machines (network namespaces, as
# root); and Wine with mingw-w64 (test/wine runs the real agent under Wine;
# simnode builds the ProcessPrng DLL of pkg/simnode/wine/winedll with mingw).
# Installed with apt and npm when missing and this user may; tests whose
# tools are missing skip, except under CI=true, where they fail.
test-deps: ## install sshd, ssh/sftp, libvirtd, Node.js, pscheck's npm packages, Wine and mingw-w64 when missing
	@sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	pkgs=; \
	[ -x /usr/sbin/sshd ] || pkgs="$$pkgs openssh-server"; \
	command -v sftp >/dev/null || pkgs="$$pkgs openssh-client"; \
	[ -x /usr/sbin/libvirtd ] || pkgs="$$pkgs libvirt-daemon"; \
	command -v virsh >/dev/null || pkgs="$$pkgs libvirt-clients"; \
	command -v npm >/dev/null || pkgs="$$pkgs nodejs npm"; \
	command -v rsync >/dev/null || pkgs="$$pkgs rsync"; \
	[ -x /usr/bin/etcd ] || pkgs="$$pkgs etcd-server"; \
	command -v ip >/dev/null || pkgs="$$pkgs iproute2"; \
	command -v wine >/dev/null || pkgs="$$pkgs wine"; \
	[ -x /usr/lib/wine/wine64 ] || pkgs="$$pkgs wine64"; \
	command -v x86_64-w64-mingw32-gcc >/dev/null || pkgs="$$pkgs gcc-mingw-w64-x86-64-win32"; \
	if [ -n "$$pkgs" ]; then \
		if [ "$$(id -u)" = 0 ] || command -v sudo >/dev/null; then \
			echo "installing:$$pkgs"; \
			$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$pkgs; \
		else echo "missing:$$pkgs (the tests that need them will skip)"; fi; \
	fi
	@if command -v npm >/dev/null && [ ! -d tools/pscheck/node_modules/web-tree-sitter ]; then \
		cd tools/pscheck && npm ci --ignore-scripts --no-audit --no-fund; fi

test-go: ## go vet and go test ./...
	$(GO) vet ./...
	SWDT_CLUSTER_BIN=$(CLUSTER_BIN) $(GO) test -timeout 25m $(GOTESTFLAGS) ./...

# The packages whose goroutines share state (parallel uploads, the swap's
# resend, the SSH client's sessions, simnode's machine), under the race
# detector.
RACE_PKGS := ./pkg/hotswap ./pkg/provision ./pkg/remote ./pkg/node ./pkg/simnode/...

test-race: agent ## go test -race of the packages that run goroutines over shared state
	SWDT_CLUSTER_BIN=$(CLUSTER_BIN) $(GO) test -race -timeout 25m $(GOTESTFLAGS) $(RACE_PKGS)

cluster-bins: ## build kube-apiserver, kube-controller-manager, kubelet.exe, kube-log-runner.exe and crifake of hack/cluster's Kubernetes release into the user cache (once: about 40 min cold on 2 cores)
	@mkdir -p $(CLUSTER_BIN)
	@for c in kube-apiserver kube-controller-manager; do \
		[ -x $(CLUSTER_BIN)/$$c ] && continue; \
		echo "building $$c $(CLUSTER_K8S) into $(CLUSTER_BIN) (once)"; \
		(cd hack/cluster && $(GO) build -trimpath -ldflags '$(CLUSTER_LDFLAGS)' -o $(CLUSTER_BIN)/$$c.tmp k8s.io/kubernetes/cmd/$$c) && \
		mv $(CLUSTER_BIN)/$$c.tmp $(CLUSTER_BIN)/$$c || exit 1; \
	done
	@# kubelet.exe for the Wine tier, and a developer's build of it (another
	@# version stamp, as `git describe` gives a local build): the same
	@# packages, so the second is a relink.
	@[ -f $(CLUSTER_BIN)/kubelet.exe ] || { echo "building kubelet.exe $(CLUSTER_K8S) (GOOS=windows) into $(CLUSTER_BIN) (once)"; \
		cd hack/cluster && GOOS=windows GOARCH=amd64 $(GO) build -trimpath -ldflags '$(CLUSTER_LDFLAGS)' \
		-o $(CLUSTER_BIN)/kubelet.exe.tmp k8s.io/kubernetes/cmd/kubelet && mv $(CLUSTER_BIN)/kubelet.exe.tmp $(CLUSTER_BIN)/kubelet.exe; }
	@[ -f $(CLUSTER_BIN)/kubelet-dev.exe ] || { echo "building kubelet.exe $(CLUSTER_DEV) (GOOS=windows) into $(CLUSTER_BIN) (once)"; \
		cd hack/cluster && GOOS=windows GOARCH=amd64 $(GO) build -trimpath -ldflags '$(call cluster_ldflags,$(CLUSTER_DEV))' \
		-o $(CLUSTER_BIN)/kubelet-dev.exe.tmp k8s.io/kubernetes/cmd/kubelet && mv $(CLUSTER_BIN)/kubelet-dev.exe.tmp $(CLUSTER_BIN)/kubelet-dev.exe; }
	@# kube-log-runner.exe of the same release (a node binary), which runs
	@# the Wine tier's kubelet service with its log in a file.
	@[ -f $(CLUSTER_BIN)/kube-log-runner.exe ] || { cd hack/cluster && GOOS=windows GOARCH=amd64 $(GO) build -trimpath \
		-o $(CLUSTER_BIN)/kube-log-runner.exe.tmp k8s.io/component-base/logs/kube-log-runner && mv $(CLUSTER_BIN)/kube-log-runner.exe.tmp $(CLUSTER_BIN)/kube-log-runner.exe; }
	@[ -x $(CLUSTER_BIN)/crifake ] || { cd hack/cluster && $(GO) build -trimpath -o $(CLUSTER_BIN)/crifake.tmp ./crifake && mv $(CLUSTER_BIN)/crifake.tmp $(CLUSTER_BIN)/crifake; }

test-cluster: test-deps agent cluster-bins ## the cluster tier alone: swdt join and the cluster check against a real control plane, on loopback and on separate machines (network namespaces; simulated kubelet), and the real kubelet.exe under Wine
	SWDT_CLUSTER_BIN=$(CLUSTER_BIN) $(GO) test $(GOTESTFLAGS) -run 'TestControlPlane|TestVersionMatchesModule|Join|ClusterCheck' \
		./internal/clustertest/ ./cmd/swdt/app/ ./test/wine/

cross: agent ## build swdt for windows/amd64 and darwin/arm64 into bin/, and every package for windows
	GOOS=windows GOARCH=amd64 $(GOBUILD) -o $(BIN)/swdt-windows-amd64.exe ./cmd/swdt
	GOOS=darwin GOARCH=arm64 $(GOBUILD) -o $(BIN)/swdt-darwin-arm64 ./cmd/swdt
	GOOS=windows GOARCH=amd64 $(GO) build ./...
	GOOS=windows GOARCH=arm64 $(GO) build ./cmd/swdt-agent ./pkg/winos ./pkg/agent

lint: ## gofmt (must list nothing), go vet, and go vet of the Windows-only code with GOOS=windows
	@out="$$(find . -name '*.go' -not -path '*/node_modules/*' -not -path '*/testdata/*' -not -path './.cache/*' | xargs gofmt -l)"; \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOOS=windows GOARCH=amd64 $(GO) vet ./...
	GOOS=windows GOARCH=arm64 $(GO) vet ./cmd/swdt-agent ./pkg/winos ./pkg/agent
	GOOS=windows GOARCH=amd64 $(GO) vet ./test/wine/testdata/winsvc ./test/wine/testdata/fakewins ./test/wine/testdata/fakechoco

generate: schema ## regenerate deep-copy functions of the Node API, and its JSON Schema
	$(GO) run k8s.io/code-generator/cmd/deepcopy-gen@$(K8S_VERSION) \
		--go-header-file /dev/null --output-file zz_generated.deepcopy.go \
		./apis/config/v1alpha1

schema: ## regenerate schemas/node.schema.json from the Node API's types (a test fails when it is stale)
	$(GO) run ./hack/genschema -api apis/config/v1alpha1 -o schemas/node.schema.json

# BENCHFLAGS pass options to the bench, e.g. BENCHFLAGS='-rounds 3 -big-mb 64'.
# With SWDT_CLUSTER_BIN set (the cluster tier's cache), the bench also pushes
# its two Windows builds of kubelet as a build straight from make, and times
# swdt rollout over 1, 10 and 30 Nodes (skipped, saying why, without it).
BENCHFLAGS ?=
bench: build ## measure swdt against OpenSSH sftp, rsync and each path's floor on loopback and emulated links (docs/benchmarks.md)
	@command -v rsync >/dev/null || { sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends rsync; }
	$(GO) run ./bench -swdt $(BIN)/swdt -simnode $(BIN)/simnode $(BENCHFLAGS)
	$(GO) test -run '^$$' -bench AgentOp -benchtime 500x ./pkg/node

demo: build ## run every swdt command against a simulated Windows node (simnode) on loopback
	$(GO) run ./hack/demo -swdt $(BIN)/swdt -simnode $(BIN)/simnode -go $(GO)

images: build ## record docs/demo.txt from a real make demo run; render it and docs/architecture.dot (installs graphviz when missing)
	@command -v dot >/dev/null || { sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y --no-install-recommends graphviz; }
	{ echo '$$ make demo'; NO_COLOR=1 $(GO) run ./hack/demo -swdt $(BIN)/swdt -simnode $(BIN)/simnode -go $(GO) 2>&1; } > docs/demo.txt
	awk -f docs/terminal.awk docs/demo.txt | dot -Tsvg -o docs/demo.svg
	awk -f docs/terminal.awk docs/demo.txt | dot -Tpng -o docs/demo.png
	dot -Tsvg docs/architecture.dot -o docs/architecture.svg
	dot -Tpng -Gdpi=96 docs/architecture.dot -o docs/architecture.png

clean: ## remove build output
	rm -rf $(BIN) $(AGENT_DIR)/*.exe $(AGENT_DIR)/*.sha256
