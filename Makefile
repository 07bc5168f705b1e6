# `make run` and `make test` do all set-up on a fresh machine: a .venv with the Python
# packages, and redis-server from Debian's packages when it is missing.
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup run test redis-server kube-bins kube-bin-dir helm-path promtool check-rules etcd-server kubectl

setup: $(VENV)/.installed redis-server

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

redis-server:
	@command -v redis-server >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q redis-server; }

# The main job: an embedded Redis, a 20,000-node mixed fleet, the dispatcher, shards and
# binder as processes, the mixed workload with a kubelet's background writes (--churn) and
# the live table, then the report in out/.
run: setup
	$(BIN)/shardsched bench --workload mixed --nodes 20000 --profile mixed --pods 50000 \
		--churn --live --json out/run.json --plot out/

test: setup kube-bins
	$(BIN)/pytest

# The real components of the end-to-end tests and kube_vs (benchmarks/kube_cluster.py): etcd from Debian,
# kubectl (kustomize and the manifest checks), and kube-apiserver, kube-scheduler and kwok
# built from the Go module proxy into .cache/kube-bin/<versions>/, once per machine.
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces the k8s.io staging modules
# with ./staging), so tests/kube/go.mod requires it and pins each staging module instead.
KUBE_VERSION := $(shell awk '/^require k8s.io\/kubernetes /{print $$3}' tests/kube/go.mod)
KWOK_VERSION := v0.7.0
# helm, for the chart's tests (helm lint, helm template): built from the Go module proxy as
# kwok is, into its own directory so that the kube binaries are not rebuilt for it.
HELM_VERSION := v3.22.0
HELM := .cache/helm-bin/helm-$(HELM_VERSION)/helm
KUBE_BIN := .cache/kube-bin/k8s-$(KUBE_VERSION)-kwok-$(KWOK_VERSION)
KUBE_LDFLAGS := -s -w -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) \
	-X k8s.io/component-base/version.gitTreeState=clean

kube-bins: $(KUBE_BIN)/.built $(HELM) etcd-server kubectl

kube-bin-dir:
	@echo $(abspath $(KUBE_BIN))

helm-path:
	@echo $(abspath $(HELM))

$(HELM):
	@command -v go >/dev/null || { echo "kube-bins needs Go (https://go.dev/dl/)" >&2; exit 1; }
	mkdir -p $(dir $@)
	GOBIN=$(abspath $(dir $@)) GOFLAGS=-trimpath go install -ldflags '-s -w' helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

$(KUBE_BIN)/.built: tests/kube/go.mod tests/kube/go.sum
	@command -v go >/dev/null || { echo "kube-bins needs Go (https://go.dev/dl/)" >&2; exit 1; }
	mkdir -p $(KUBE_BIN)
	cd tests/kube && go build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $(abspath $(KUBE_BIN))/ \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler
	GOBIN=$(abspath $(KUBE_BIN)) GOFLAGS=-trimpath go install -ldflags '-s -w' sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)
	touch $@

# promtool, for `make check-rules` (tests/check_rules.py: the alerting rules and the
# dashboard's queries parsed by `promtool check rules`): not part of kube-bins or the tests, since Prometheus and its dependencies take about 25 minutes to build on
# two busy cores. Prometheus 3.x's Go module versions are v0.3xx.
PROMTOOL_VERSION := v0.316.0
PROMTOOL := .cache/promtool-bin/prometheus-$(PROMTOOL_VERSION)/promtool

promtool: $(PROMTOOL)

check-rules: setup $(PROMTOOL)
	$(BIN)/python tests/check_rules.py $(PROMTOOL)

$(PROMTOOL):
	@command -v go >/dev/null || { echo "promtool needs Go (https://go.dev/dl/)" >&2; exit 1; }
	mkdir -p $(dir $@)
	GOBIN=$(abspath $(dir $@)) GOFLAGS=-trimpath go install -ldflags '-s -w' github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION)

etcd-server:
	@command -v etcd >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q etcd-server; }

kubectl:
	@command -v kubectl >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q kubectl; }
