# Criticizer — the two commands are `make run` and `make test`; both install
# what is missing first (pinned: go.mod, internal/devstack/_npm/package-lock.json).
SHELL := /bin/bash
GO    ?= go
NPM_DIR := internal/devstack/_npm
NPM_STAMP := $(NPM_DIR)/node_modules/.criticizer-installed
FUNCTIONS := $(notdir $(wildcard functions/*))
# Lambda: provided.al2023 on arm64, no cgo, no RPC shim, stripped.
LAMBDA_ENV   := CGO_ENABLED=0 GOOS=linux GOARCH=arm64
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags='-s -w'

.PHONY: explore mutate eval rehearse rules template run test build bench bench-micro chaos deps java chromium swaks fuzz fuzz-short lambdabench vet clean help infra-test synth deploy $(addprefix invoke-,$(FUNCTIONS))

# Sample events per function (events/). `make invoke-<fn>` runs the function
# against the local stack of `make run` in this process; with SAM=1 in SAM's
# Lambda container (after `sam build`; Docker), still against `make run`
# (SAM_HOST: its host seen from the container); with SAM_ENV_VARS=env.json
# in SAM's container against a deployed stack whose names the file gives.
SAM_HOST ?= host.docker.internal
EVENT_intake   := events/intake-webhook.json
EVENT_fetch    := events/fetch-sqs.json
EVENT_llm      := events/llm-sqs.json
EVENT_notify   := events/notify-sqs.json
EVENT_feedback := events/feedback-sqs.json
EVENT_sweeper  := events/sweeper-schedule.json
EVENT_reply    := events/reply-sqs.json
SAM_NAME_intake := IntakeFunction
SAM_NAME_fetch := FetchFunction
SAM_NAME_llm := LlmFunction
SAM_NAME_notify := NotifyFunction
SAM_NAME_feedback := FeedbackFunction
SAM_NAME_sweeper := SweeperFunction
SAM_NAME_reply := ReplyFunction

$(addprefix invoke-,$(FUNCTIONS)): invoke-%:
	@if [ -n "$(SAM_ENV_VARS)" ]; then \
		test -f "$(SAM_ENV_VARS)" || { echo "SAM_ENV_VARS=$(SAM_ENV_VARS): no such file" >&2; exit 1; }; \
		sam local invoke $(SAM_NAME_$*) -e $(EVENT_$*) --env-vars "$(SAM_ENV_VARS)"; \
	elif [ -n "$(SAM)" ]; then \
		mkdir -p .devstack && $(GO) run ./cmd/devstack sam-env -host $(SAM_HOST) > .devstack/sam-env.json && \
		sam local invoke $(SAM_NAME_$*) -e $(EVENT_$*) --env-vars .devstack/sam-env.json \
			--parameter-overrides LocalStackHost=$(SAM_HOST); \
	else \
		$(GO) run ./cmd/devstack invoke $* $(EVENT_$*); \
	fi

# `sam build` (template.yaml: BuildMethod makefile, CodeUri .) runs
# build-<LogicalId> with ARTIFACTS_DIR set; each builds its function's
# bootstrap the way `make build` does.
SAM_BUILD_TARGETS := $(foreach fn,$(FUNCTIONS),build-$(SAM_NAME_$(fn)))
.PHONY: $(SAM_BUILD_TARGETS)
$(SAM_BUILD_TARGETS): build-%Function:
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set (sam build sets it)" >&2; exit 1; }
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" ./functions/$(shell echo $* | tr A-Z a-z)

help:
	@echo "make run    start the local stack and serve on 127.0.0.1:\$${PORT:-3000}"
	@echo "make test   run every test against a local stack it starts and stops"
	@echo "make build  build one bootstrap per function into build/<fn>/bootstrap"
	@echo "make bench  print the benchmark table (intake vs Powertools, pipeline latency, AWS calls, cost per 1,000 reviews, sweep reads); BENCH_FLAGS='-requests 200' for a quick run"
	@echo "make bench-micro  run the Go micro-benchmarks (go test -bench)"
	@echo "make fuzz [FUZZTIME=30s | FUZZTOTAL=10m]  exploratory fuzzing of every fuzz target (docs/fuzzing.md); make test runs their seeds only"
	@echo "make chaos [SEED=n JOBS=200 RATE=0.03 LOG=file]  randomized fault campaign on the local stack"
	@echo "make explore  every ordering of the delivery protocol within each scenario's bounds (docs/chaos.md)"
	@echo "make mutate [MUTATE_FLAGS='-run requeue']  the proof's strength: planted bugs, which check catches each, the kill rate (docs/chaos.md)"
	@echo "make eval [EVAL_CRITICS=offline,standin,bedrock,openai] [EVAL_VOTES=table|file.json]  critics on changes with planted bugs, readers' votes (docs/eval.md)"
	@echo "make rehearse  deploy rehearsal: the real bootstraps under RIE with template.yaml's environments, one review end to end (docs/deploy.md)"
	@echo "make deploy MAIL_FROM='Name <addr>'  deploy to AWS (CDK, infra/)"

run: deps
	$(GO) build -o .devstack/bin/devstack ./cmd/devstack
	exec .devstack/bin/devstack run

test: deps
	@unformatted="$$(gofmt -l cmd functions internal infra/*.go)"; \
		if [ -n "$$unformatted" ]; then echo "gofmt -w these files:" >&2; echo "$$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	scripts/fuzz.sh -check-docs
	CRITICIZER_REQUIRE_STACK=1 $(GO) run ./cmd/devstack exec -- $(GO) test -count=1 -timeout 12m ./...
	$(MAKE) infra-test

# Critics on changes with planted bugs (docs/eval.md): found, missed, false
# findings and tokens. EVAL_CRITICS=offline,standin,bedrock,openai; bedrock
# and openai read the llm function's variables from the environment.
# EVAL_VOTES=table (the jobs table) or a JSON file adds readers' votes per rule.
eval:
	$(GO) run ./cmd/eval -critic $(or $(EVAL_CRITICS),offline,standin) $(if $(EVAL_VOTES),-votes $(EVAL_VOTES))

# template.yaml, the SAM template, rendered from the deployment's
# description (internal/deploy); committed, and a test fails when it is not
# what this writes (docs/development.md, "Adding to the deployment").
template:
	$(GO) run ./cmd/template

# docs/rules.md's "Proved by" lists, from the tests that cite each rule
# (TestRules_Citations fails when they are stale).
rules:
	$(GO) run ./cmd/rules

# infra/ is its own Go module (the CDK app): the root `go test ./...` does not
# reach it. Its one package is named `.`, not `./...`: after `make synth`,
# infra/node_modules holds the CDK CLI's Go init templates, which are not Go. jsii starts Node before TestMain runs, so its Node-version warning
# can only be silenced from outside the process.
INFRA_ENV := JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
INFRA_NPM := infra/node_modules/.criticizer-installed

infra-test:
	cd infra && $(INFRA_ENV) $(GO) vet . && $(INFRA_ENV) $(GO) test -count=1 .

$(INFRA_NPM): infra/package.json infra/package-lock.json
	cd infra && npm ci --no-audit --no-fund --loglevel=error
	touch $@

synth: build $(INFRA_NPM)
	cd infra && $(INFRA_ENV) npx cdk synth -q $(if $(MAIL_FROM),-c mailFrom="$(MAIL_FROM)")

deploy: build $(INFRA_NPM)
	@test -n "$(MAIL_FROM)" || { echo 'usage: make deploy MAIL_FROM="Name <sender@verified-domain>"' >&2; exit 1; }
	cd infra && $(INFRA_ENV) npx cdk deploy -c mailFrom="$(MAIL_FROM)"

# A deploy rehearsal without AWS (cmd/rehearse; docs/deploy.md): every
# function's bootstrap built as deployed (linux/arm64) and for this machine,
# run under the Lambda Runtime Interface Emulator with exactly the
# environment template.yaml gives it, one signed review through the whole
# path on the local stack. Not part of make test (minutes on two cores).
# REHEARSE_FLAGS='-template /tmp/broken.yaml -v'
REHEARSE_FLAGS ?=
rehearse: deps
	$(GO) run ./cmd/rehearse $(REHEARSE_FLAGS)

build:
	@for fn in $(FUNCTIONS); do \
		echo "build/$$fn/bootstrap"; \
		$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o build/$$fn/bootstrap ./functions/$$fn || exit 1; \
	done

# The benchmark table (docs/benchmarks.md): cmd/bench on the local stack,
# with the Powertools peer in bench/powertools (pinned, npm ci when needed).
BENCH_NPM := bench/powertools/node_modules/.criticizer-installed
BENCH_FLAGS ?=

$(BENCH_NPM): bench/powertools/package.json bench/powertools/package-lock.json
	cd bench/powertools && npm ci --no-audit --no-fund --loglevel=error
	touch $@

bench: deps $(BENCH_NPM)
	$(GO) build -o .devstack/bin/bench ./cmd/bench
	$(GO) run ./cmd/devstack exec -- .devstack/bin/bench $(BENCH_FLAGS)
	@echo
	@echo "5. Bootstrap size, cold start and peak memory (cmd/lambdabench)"
	$(GO) run ./cmd/devstack exec -- $(GO) run ./cmd/lambdabench $(LAMBDABENCH_FLAGS)

bench-micro: deps
	CRITICIZER_REQUIRE_STACK=1 $(GO) run ./cmd/devstack exec -- $(GO) test -run='^$$' -bench=. -benchmem ./...

# A randomized fault campaign on the local stack (docs/chaos.md): JOBS
# reviews, faults at every AWS call, workers restarted; fails on a duplicate
# email, a lost or stuck job, or a leak. SEED reproduces a campaign; LOG
# names a file for the functions' JSON logs.
chaos: deps
	$(GO) run ./cmd/devstack exec -- $(GO) run ./cmd/chaos -jobs $(or $(JOBS),200) $(if $(SEED),-seed $(SEED)) $(if $(RATE),-rate $(RATE)) $(if $(LOG),-log $(LOG))

# The exhaustive exploration of the delivery protocol (internal/explore;
# docs/chaos.md): every scenario at deeper bounds than make test's, the
# variants that must be caught, the figures. Offline: no stack needed.
# EXPLORE_FLAGS='-scenario send-faults -write internal/explore/testdata/counterexamples'
EXPLORE_FLAGS ?=
explore:
	$(GO) run ./cmd/explore $(EXPLORE_FLAGS)

# The strength of that proof (cmd/mutate; docs/chaos.md): each of a fixed
# list of bugs planted in the protocol code (go build -overlay: the tree is
# never touched), run against the exploration and the store conformance
# suites (DynamoDB's on the local stack); per bug, the check that caught
# it, and the kill rate. Fails on a survivor. Not part of make test.
# MUTATE_FLAGS='-run requeue -checks explore -v'
MUTATE_FLAGS ?=
mutate: deps
	$(GO) run ./cmd/devstack exec -- $(GO) run ./cmd/mutate $(MUTATE_FLAGS)

# Each function's bootstrap size, cold-start init time through a local Lambda
# Runtime API, and peak memory (cmd/lambdabench), against the local stack.
LAMBDABENCH_FLAGS ?=
lambdabench: deps
	$(GO) run ./cmd/devstack exec -- $(GO) run ./cmd/lambdabench $(LAMBDABENCH_FLAGS)

# Exploratory fuzzing (scripts/fuzz.sh; docs/fuzzing.md): every fuzz
# target in the repository in turn, FUZZTIME each (or FUZZTOTAL shared
# equally, e.g. FUZZTOTAL=10m); prints new failing inputs, which Go writes
# to <package>/testdata/fuzz/<Target>/ (commit them: they become seeds),
# and fails if there are any. Random by nature, so `make test` does not run
# it: `make test` runs every target over its committed seeds (go test).
# `make fuzz-short` is an opt-in smoke run, 1000 new inputs per target.
FUZZTIME ?= 30s
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) $(if $(FUZZTOTAL),FUZZTOTAL=$(FUZZTOTAL)) scripts/fuzz.sh

fuzz-short:
	GO=$(GO) FUZZTIME=1000x scripts/fuzz.sh

deps: java chromium swaks $(NPM_STAMP)

$(NPM_STAMP): $(NPM_DIR)/package.json $(NPM_DIR)/package-lock.json
	cd $(NPM_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# DynamoDB Local needs a Java runtime (17+). Installed with apt when missing
# and we are root (CI, fresh machines); otherwise say what to do.
java:
	@command -v java >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing a Java runtime for DynamoDB Local"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; \
		else echo "DynamoDB Local needs Java 17+: install openjdk-17-jre-headless" >&2; exit 1; fi; }

# The email screenshot tests (internal/mail) use headless Chromium; a CJK
# font lets the screenshots show non-ASCII titles. Installed with apt when
# missing and we are root; otherwise a warning (`make run` does not need it).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing headless Chromium for the email screenshot tests"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null; \
		else echo "warning: the email screenshot tests need Chromium (make test fails without it): install the chromium package" >&2; fi; }

# swaks sends a reply to make run's SMTP listener by hand (README, "Your
# first review"); a 100 KB Perl script. Installed with apt when missing
# and we are root; otherwise a hint (go run ./cmd/devstack reply does the
# same).
swaks:
	@command -v swaks >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing swaks, to reply to make run's emails by hand"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq swaks >/dev/null; \
		else echo "hint: install swaks to reply to make run's emails by hand (or use go run ./cmd/devstack reply)" >&2; fi; }

clean:
	rm -rf build .devstack infra/cdk.out
