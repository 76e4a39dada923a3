// Package layers holds the import rules of docs/architecture.md's package
// map (R-LAYER-1) as data, and checks an import graph against them. Its
// test reads this module's graph with `go list` and fails on a package
// that imports one it should not, so the map cannot drift from the code.
//
// Why not a linter's configuration (depguard and the like): the rules are
// few, name packages of this module, and are worth a test that runs with
// every `go test ./...`; a dozen lines of matching keep them that.
package layers

import (
	"fmt"
	"slices"
	"strings"
)

// Module is this module's path; patterns without a host are under it.
const Module = "github.com/criticizer/criticizer"

// Rule forbids packages to import others.
type Rule struct {
	// Name says what the rule keeps, in a few words.
	Name string
	// From are the packages the rule covers, as patterns: "internal/job"
	// is that package, "internal/wire/..." it and every package below.
	// A pattern without a host is relative to Module.
	From []string
	// Except are packages among From the rule does not cover.
	Except []string
	// Deps: the rule covers every package From links (go list's Deps),
	// not only those it imports itself.
	Deps bool
	// Forbid are the patterns a covered package may not import (or, with
	// Deps, link).
	Forbid []string
}

// Rules returns the import rules; docs/architecture.md's package map says
// them in prose (R-LAYER-1, R-WIRE-2).
func Rules() []Rule {
	return []Rule{
		{
			Name: "the pure domain links no AWS package",
			From: []string{"internal/job", "internal/delivery", "internal/digest", "internal/prefs", "internal/diff",
				"internal/reviewers", "internal/unsubscribe", "internal/signed", "internal/redact", "internal/termtext",
				"internal/reposettings", "internal/webhook", "internal/cost", "internal/obs", "internal/config"},
			Deps:   true,
			Forbid: []string{"github.com/aws/..."},
		},
		{
			// They classify the SDK's errors through internal/retry (smithy's
			// error types), and call no AWS service.
			Name:   "the critic, votes, mail and the stage runner link no AWS service client",
			From:   []string{"internal/critic", "internal/vote", "internal/mail", "internal/stage", "internal/deadletter", "internal/source", "internal/retry", "internal/codehost"},
			Deps:   true,
			Forbid: []string{"github.com/aws/aws-sdk-go-v2/service/..."},
		},
		{
			Name: "only the wiring and the harnesses import the wiring, the stages and the handlers",
			From: []string{"internal/..."},
			Except: []string{"internal/wire/...", "internal/devstack/...", "internal/e2e", "internal/chaos", "internal/testenv", "internal/explore",
				"internal/notify"},
			Forbid: []string{"internal/pipeline", "internal/notify", "internal/posting", "internal/sesevent", "internal/sweep", "internal/inbound", "internal/api",
				"internal/wire/..."},
		},
		{
			// The notify stage shares the Base of every stage (begin: is
			// there work, re-enqueue a stranded next stage) with fetch and
			// llm, and nothing else of the stages and handlers.
			Name:   "the notify stage imports of the stages only pipeline's Base",
			From:   []string{"internal/notify"},
			Forbid: []string{"internal/posting", "internal/sesevent", "internal/sweep", "internal/inbound", "internal/api", "internal/wire/..."},
		},
		{
			Name: "the store links no stage, handler or wiring",
			From: []string{"internal/store/..."},
			Deps: true,
			Forbid: []string{"internal/pipeline", "internal/notify", "internal/posting", "internal/api", "internal/wire/...", "internal/sesevent", "internal/sweep",
				"internal/inbound", "internal/stage"},
		},
		{
			// What a reader is owed is said apart from how it is sent: a bug
			// in the rows, the stores or the stages cannot be the oracle's
			// own (R-OWED-1).
			Name:   "the owed oracle links no package of this module",
			From:   []string{"internal/owed"},
			Deps:   true,
			Forbid: []string{"internal/...", "cmd/...", "github.com/aws/..."},
		},
		{
			// The contracts are what a stage, a handler and memstore
			// build against; a contract that imported an AWS package
			// would hand them DynamoDB's form (R-LAYER-2). It links
			// smithy's error types only through internal/vote's findings
			// (internal/retry), which the rule on the critic allows.
			Name:   "the store's contracts import no AWS package",
			From:   []string{"internal/store"},
			Forbid: []string{"github.com/aws/..."},
		},
		{
			Name:   "the store's contracts link no AWS service client and no DynamoDB encoding",
			From:   []string{"internal/store"},
			Deps:   true,
			Forbid: []string{"github.com/aws/aws-sdk-go-v2/service/...", "github.com/aws/aws-sdk-go-v2/feature/..."},
		},
		{
			// A stage writes its job through typed fields (store.JobWrite),
			// encoded to attributes inside the DynamoDB driver only; a
			// package that cannot link DynamoDB's encoding cannot spell
			// a stored attribute's value, and memstore keeps typed fields,
			// not items (R-LAYER-2). Linked, not only imported: a stage
			// that took a *dynamo.Jobs would link the driver through it.
			Name: "the stages, handlers and memstore name no stored attribute: they link no DynamoDB package",
			From: []string{"internal/pipeline/...", "internal/notify/...", "internal/posting", "internal/sesevent", "internal/sweep", "internal/inbound",
				"internal/api", "internal/stage", "internal/store/memstore", "internal/store/storetest"},
			Deps:   true,
			Forbid: []string{"github.com/aws/aws-sdk-go-v2/service/dynamodb/...", "github.com/aws/aws-sdk-go-v2/feature/dynamodb/..."},
		},
		{
			// The explorer builds the functions' wiring (which links the
			// driver) over memstore: it may link DynamoDB, never spell it.
			Name:   "the explorer names no stored attribute: it imports no DynamoDB package",
			From:   []string{"internal/explore"},
			Forbid: []string{"github.com/aws/aws-sdk-go-v2/service/dynamodb/...", "github.com/aws/aws-sdk-go-v2/feature/dynamodb/...", "internal/store/dynamo"},
		},
		{
			Name:   "the operator's CLI links no function's wiring, HTTP handler or local stack (R-WIRE-2)",
			From:   []string{"cmd/criticizer"},
			Deps:   true,
			Forbid: []string{"internal/wire/...", "internal/api", "internal/devstack", "internal/fault", "internal/chaos"},
		},
	}
}

// Package is one package of the graph: its own imports and everything it
// links (go list's Imports and Deps), as import paths.
type Package struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// Check returns one line per package and rule it breaks, naming the
// first forbidden package it imports (or links) and how many more, sorted.
func Check(rules []Rule, pkgs []Package) []string {
	var bad []string
	for _, r := range rules {
		verb, clause := "imports", ""
		if r.Deps {
			verb = "links"
		}
		for _, p := range pkgs {
			if !r.Covers(p.ImportPath) {
				continue
			}
			edges := p.Imports
			if r.Deps {
				edges = p.Deps
			}
			var hit []string
			for _, e := range edges {
				if matchAny(r.Forbid, e) {
					hit = append(hit, rel(e))
				}
			}
			if len(hit) == 0 {
				continue
			}
			if clause = ""; len(hit) > 1 {
				clause = fmt.Sprintf(" and %d more", len(hit)-1)
			}
			bad = append(bad, fmt.Sprintf("%s %s %s%s, against the rule: %s (R-LAYER-1)", rel(p.ImportPath), verb, hit[0], clause, r.Name))
		}
	}
	slices.Sort(bad)
	return bad
}

// Covers says whether the rule covers the package at path.
func (r Rule) Covers(path string) bool {
	return matchAny(r.From, path) && !matchAny(r.Except, path)
}

// matchAny says whether path matches one of the patterns.
func matchAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(pat string) bool { return Match(pat, path) })
}

// Match says whether path is pat, or below it when pat ends in "/...";
// a pattern without a host is relative to Module.
func Match(pat, path string) bool {
	if !strings.Contains(strings.SplitN(pat, "/", 2)[0], ".") {
		pat = Module + "/" + pat
	}
	if base, ok := strings.CutSuffix(pat, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pat
}

// rel shortens a path of this module for messages.
func rel(path string) string {
	if r, ok := strings.CutPrefix(path, Module+"/"); ok {
		return r
	}
	return path
}
