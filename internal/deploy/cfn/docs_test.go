package cfn_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/criticizer/criticizer/internal/deploy"
)

// docsText is README.md and every page under docs/ but the local stack's
// (which names its own resources), by path.
func docsText(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..", "..")
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join(root, "README.md"))
	out := map[string]string{}
	for _, p := range paths {
		if filepath.Base(p) == "local-stack.md" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = string(b)
	}
	return out
}

// The pages' deploy and operations facts, followed literally for a
// default deploy, name outputs, queues, context keys and parameters the
// deployment has; and docs/deploy.md's deploy-time table has a row for
// every parameter, with its context key and its template.yaml name.
func TestDocs_NameWhatADefaultDeployHas(t *testing.T) {
	d := deploy.Describe()
	outputs, params, ctx, queues := map[string]bool{}, map[string]bool{}, map[string]bool{deploy.ContextAssetDir: true}, map[string]bool{}
	for _, o := range d.Outputs {
		outputs[o.Name] = true
	}
	for _, p := range d.Parameters {
		params[p.Name] = true
		if !p.SAMOnly {
			ctx[p.ContextKey()] = true
		}
	}
	for _, q := range d.Queues {
		queues[deploy.StackName+"-"+q.Name], queues[deploy.StackName+"-"+q.Name+"-dlq"] = true, true
	}
	cited, passed := 0, 0
	tableCtx, tableParams := map[string]bool{}, map[string]bool{}
	for page, text := range docsText(t) {
		for _, m := range regexp.MustCompile("`([A-Z][A-Za-z]*(?:Arn|Url|Name))`").FindAllStringSubmatch(text, -1) {
			cited++
			if !outputs[m[1]] && !params[m[1]] {
				t.Errorf("%s cites %s: not an output of the stack nor a parameter", page, m[1])
			}
		}
		for _, m := range regexp.MustCompile(`(?i)\b`+deploy.StackName+`-(?:fetch|llm|notify|feedback)(?:-dlq)?\b`).FindAllString(text, -1) {
			if !queues[m] {
				t.Errorf("%s names queue %s; a default deploy has %v", page, m, keys(queues))
			}
		}
		for _, m := range regexp.MustCompile("-c ([a-zA-Z]+)=").FindAllStringSubmatch(text, -1) {
			passed++
			if !ctx[m[1]] && m[1] != "key" { // "-c key=value", the syntax
				t.Errorf("%s passes -c %s=: not a context key the app reads", page, m[1])
			}
		}
		for _, m := range regexp.MustCompile("(?m)^\\| (?:`([a-zA-Z]+)`|—) \\| (?:`([A-Z][A-Za-z]+)`|—) \\|").FindAllStringSubmatch(text, -1) {
			if m[1] != "" {
				tableCtx[m[1]] = true
				if !ctx[m[1]] {
					t.Errorf("%s table: context %s is not read by the app", page, m[1])
				}
			}
			if m[2] != "" {
				tableParams[m[2]] = true
				if !params[m[2]] {
					t.Errorf("%s table: %s is not a parameter", page, m[2])
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
			t.Errorf("docs/deploy.md's deploy-time table has no row for parameter %s", k)
		}
	}
	if cited < 10 || passed < 3 {
		t.Fatalf("%d outputs cited, %d -c keys passed: the pages were not read", cited, passed)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
