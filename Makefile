# Tollgate. `make demo` runs the main job; `make test` installs what is missing and runs every test.
SHELL := /bin/bash
export NODE_OPTIONS := --experimental-vm-modules --no-warnings=ExperimentalWarning
JEST := node node_modules/jest/bin/jest.js

.PHONY: all deps deps-node deps-components deps-images build test test-unit test-integration test-cluster lint bench demo clean

all: build

deps-node: node_modules/.installed
# Exactly the lock, never rewriting it (`npm ci`): the lock lists every platform's build of the
# packages that ship one per platform, and npm installs this machine's.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

deps-components:
	bash test/harness/install.sh all
	bash test/harness/install-helm.sh >/dev/null

# The test cluster's images (buildah, from the repository's Dockerfiles), rebuilt only when their
# inputs change.
deps-images: deps-components
	bash test/harness/build-images.sh >/dev/null

deps: deps-node deps-components deps-images

build: deps-node
	node node_modules/typescript/bin/tsc -p tsconfig.build.json
	# The panel is a program of its own (panel/), served as files: dist/panel/static beside dist/gateway.
	rm -rf dist/panel dist/gateway/panel && mkdir -p dist/panel && cp -r panel/static dist/panel/static
	# The gRPC service's definition, read when the gateway starts (gateway/grpc/protocol.ts).
	cp gateway/grpc/open-inference.proto dist/gateway/grpc/
	node tools/bundle/sidecar.mjs

# Two Jest runs: unit + integration on two workers, then the cluster tests on their own (the
# cluster lives only for the second; one worker, as the cluster is the machine's). Both always
# run; the target fails if either failed. With JEST_REPORT=<prefix>,
# each writes its JSON report to <prefix>-main.json and <prefix>-cluster.json (.ci/run sums them).
test: deps build
	@status=0; \
	$(JEST) --ci --maxWorkers=2 --selectProjects unit integration $(call report,main) $(JEST_ARGS) || status=1; \
	$(JEST) --ci --selectProjects cluster $(call report,cluster) $(JEST_ARGS) || status=1; \
	exit $$status

report = $(if $(JEST_REPORT),--json --outputFile=$(JEST_REPORT)-$(1).json)

test-unit: deps-node
	$(JEST) --ci --selectProjects unit $(JEST_ARGS)

test-integration: deps build
	$(JEST) --ci --maxWorkers=2 --selectProjects integration $(JEST_ARGS)

test-cluster: deps build
	$(JEST) --ci --selectProjects cluster $(JEST_ARGS)

lint: deps-node
	node node_modules/typescript/bin/tsc -p tsconfig.json --noEmit
	node node_modules/typescript/bin/tsc -p tsconfig.panel.json
	node node_modules/eslint/bin/eslint.js .
	node node_modules/prettier/bin/prettier.cjs --check .

bench: deps build
	node node_modules/tsx/dist/cli.mjs bench/run.ts $(ARGS)

# The demo needs only Node modules, the build, the Python venv and redis-server (it installs the
# last two itself when missing); not the cluster components the tests build.
demo: deps-node build
	node node_modules/tsx/dist/cli.mjs examples/demo.ts

clean:
	rm -rf dist coverage jest-report*.json
