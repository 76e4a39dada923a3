package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// docsText is README.md and every page under docs/ (deploy.md and
// operations.md hold the deploy and operations facts), each with its path.
func docsText(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join("..", "README.md"))
	sort.Strings(paths)
	out := map[string]string{}
	for _, p := range paths {
		if filepath.Base(p) == "local-stack.md" {
			// The local stack's page names its own resources (lower-case
			// "criticizer-…" queues, SQS API parameters), not a deploy's.
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(filepath.ToSlash(p), "../")] = string(b)
	}
	if _, ok := out["docs/deploy.md"]; !ok {
		t.Fatal("no docs/deploy.md")
	}
	return out
}

// TestDocs_NameWhatADefaultDeployHas: the README's and the docs pages'
// deploy and operations facts, followed literally for a default deploy,
// name outputs, queues, context keys and SAM parameters that exist: every
// output they cite is an output of the synthesized stack (or, for SAM
// parameters, of template.yaml), every queue name they cite is one the
// stack creates under its default name, every `-c key=` is a context key
// the app reads. And docs/deploy.md's deploy-time table lists every
// context key the app reads and every parameter of template.yaml.
func TestDocs_NameWhatADefaultDeployHas(t *testing.T) {
	pages := docsText(t)
	s := synth(t)
	outputs := s.tmpl["Outputs"].(map[string]any)
	params := loadSAM(t)["Parameters"].(map[string]any)
	// Queue names: "<stack>-<queue>[-dlq]" joined from the stack name.
	queues := map[string]bool{}
	for _, r := range s.resources("AWS::SQS::Queue") {
		name := strings.ReplaceAll(render(props(r)["QueueName"]), "${AWS::StackName}", StackName)
		queues[name] = true
	}
	ctx := map[string]bool{CtxAssetDir: true, CtxMailFrom: true, CtxSESIdentity: true, CtxLogLevel: true, CtxAlarmEmail: true,
		CtxCritic: true, CtxCriticModel: true, CtxOpenAIBaseURL: true, CtxMaxSendRate: true, CtxNotifyReserved: true,
		CtxReviewInstructions: true, CtxReviewInstructionsByRepo: true, CtxLLMMaxFindings: true, CtxAllowedRecipientDomains: true,
		CtxUncertainSend: true}
	cited, passed := 0, 0
	tableCtx, tableParams := map[string]bool{}, map[string]bool{}
	for page, text := range pages {
		for _, m := range regexp.MustCompile("`([A-Z][A-Za-z]*(?:Arn|Url|Name))`").FindAllStringSubmatch(text, -1) {
			cited++
			if _, ok := outputs[m[1]]; ok {
				continue
			}
			if _, ok := params[m[1]]; ok {
				continue
			}
			t.Errorf("%s cites %s: not an output of the stack nor a SAM parameter", page, m[1])
		}
		// Any case: SQS names are case-sensitive, and a lower-case
		// "criticizer-notify-dlq" is not the default deploy's queue.
		for _, m := range regexp.MustCompile(`(?i)\b`+StackName+`-(?:fetch|llm|notify|feedback)(?:-dlq)?\b`).FindAllString(text, -1) {
			if !queues[m] {
				t.Errorf("%s names queue %s; a default deploy has %v", page, m, sortedKeys(queues))
			}
		}
		for _, m := range regexp.MustCompile("-c ([a-zA-Z]+)=").FindAllStringSubmatch(text, -1) {
			passed++
			if !ctx[m[1]] && m[1] != "key" { // "-c key=value", the syntax
				t.Errorf("%s passes -c %s=: not a context key the app reads", page, m[1])
			}
		}
		// The deploy-time table: CDK context keys and SAM parameters
		// ("—" where one side has none).
		for _, m := range regexp.MustCompile("(?m)^\\| (?:`([a-zA-Z]+)`|—) \\| (?:`([A-Z][A-Za-z]+)`|—) \\|").FindAllStringSubmatch(text, -1) {
			if m[1] != "" {
				tableCtx[m[1]] = true
				if !ctx[m[1]] {
					t.Errorf("%s table: context %s is not read by the app", page, m[1])
				}
			}
			if m[2] != "" {
				tableParams[m[2]] = true
				if _, ok := params[m[2]]; !ok {
					t.Errorf("%s table: %s is not a parameter of template.yaml", page, m[2])
				}
			}
		}
	}
	for k := range ctx {
		if !tableCtx[k] {
			t.Errorf("docs/deploy.md's deploy-time table has no row for context %s", k)
		}
	}
	for k := range params {
		if !tableParams[k] {
			t.Errorf("docs/deploy.md's deploy-time table has no row for SAM parameter %s", k)
		}
	}
	if cited < 10 || passed < 3 {
		t.Fatalf("%d outputs cited, %d -c keys passed: the pages were not read", cited, passed)
	}
}
