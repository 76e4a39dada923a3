package critic

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// totalGo is a Go file whose Total is long: line 30 sits deep in it, in
// an if block, with braces in a string and a comment to mislead a naive
// scan.
var totalGo = func() []string {
	lines := []string{"package shop", "", "import \"fmt\"", "", "// Item is one line of an order.", "type Item struct {",
		"\tCents int64", "\tQty   int", "}", "",
		"// Total adds an order up.", "func Total(items []Item,", "\tdiscount int64) (int64, error) {",
		"\tvar sum int64 // a } in a comment", "\tlabel := \"{not a block\""}
	for len(lines) < 27 {
		lines = append(lines, fmt.Sprintf("\tsum += items[%d].Cents", len(lines)))
	}
	lines = append(lines, "\tif discount > 0 {", "\t\tfmt.Println(label)", "\t\tsum -= discount", "\t}", "\treturn sum, nil", "}", "",
		"func Other() {}")
	return lines
}()

// oneLineDiff is a diff of lines replacing line n (1-based) whose old
// text was old, with three lines of context on each side.
func oneLineDiff(path string, lines []string, n int, old string) string {
	from, to := max(n-3, 1), min(n+3, len(lines))
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -%d,%d +%d,%d @@\n", path, path, path, path, from, to-from+1, from, to-from+1)
	for i := from; i <= to; i++ {
		if i == n {
			b.WriteString("-" + old + "\n+" + lines[i-1] + "\n")
			continue
		}
		b.WriteString(" " + lines[i-1] + "\n")
	}
	return b.String()
}

// The enclosing function is found by a brace scan that skips strings and
// comments, out of an if block, from a signature over two lines; a
// Java method inside its class; a JavaScript arrow function; Python's
// def around an if; and where none is found, or the function is longer
// than MaxEnclosingLines, ten lines on each side.
// Rules: R-CONTEXT-1.
func TestEnclosing_FunctionOrTenLinesEachSide(t *testing.T) {
	java := []string{"package a;", "", "public class Cart {", "  private int n;", "", "  public int add(int k)", "      throws IOException {",
		"    if (k < 0) {", "      throw new IOException(\"}\");", "    }", "    n += k;", "    return n;", "  }", "", "  void clear() { n = 0; }", "}"}
	js := []string{"import x from 'x';", "", "export const handler = async (event) => {", "  const body = JSON.parse(event.body);",
		"  for (const item of body.items) {", "    total += item.price;", "  }", "  return total;", "};", "", "function other() {", "  return 1;", "}"}
	py := []string{"import os", "", "class Cart:", "    def __init__(self):", "        self.n = 0", "", "    def add(self, k):",
		"        if k < 0:", "            raise ValueError('no')", "", "        self.n += k", "        return self.n", "", "def other():", "    pass"}
	long := []string{"package a", "", "func Long() {"}
	for i := 0; i < MaxEnclosingLines+10; i++ {
		long = append(long, "\tx++")
	}
	long = append(long, "}")
	var yaml []string
	for i := range 40 {
		yaml = append(yaml, fmt.Sprintf("key%d: %d", i, i))
	}
	for _, tc := range []struct {
		name        string
		path        string
		lines       []string
		first, last int
		want        span
	}{
		{"go, deep in an if", "shop/total.go", totalGo, 30, 30, span{12, 33}},
		{"go, at the function's top", "shop/total.go", totalGo, 14, 15, span{12, 33}},
		{"go, in a type: no function", "shop/total.go", totalGo, 7, 7, span{1, 17}},
		{"java method in a class", "src/Cart.java", java, 11, 11, span{6, 13}},
		{"java, in a throw's string", "src/Cart.java", java, 9, 9, span{6, 13}},
		{"javascript arrow function", "lambda/index.ts", js, 6, 6, span{3, 9}},
		{"python def around an if", "shop/cart.py", py, 9, 9, span{7, 12}},
		{"python method's last line", "shop/cart.py", py, 12, 12, span{7, 12}},
		{"a function too long", "a/long.go", long, 100, 100, span{90, 110}},
		{"no language: a window", "conf/app.yaml", yaml, 20, 21, span{10, 31}},
		{"a window clipped at the start", "conf/app.yaml", yaml, 3, 3, span{1, 13}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := enclosingSpan(tc.path, tc.lines, tc.first, tc.last); got != tc.want {
				t.Errorf("enclosingSpan(%d..%d) = %v, want %v", tc.first, tc.last, got, tc.want)
			}
		})
	}
}

// headInput is a review of a one-line change deep in Total, with the
// file as the head has it.
func headInput() Input {
	old := totalGo[28]
	lines := append([]string(nil), totalGo...)
	lines[28] = "\t\tfmt.Println(label, sum)"
	in := llmInput(oneLineDiff("shop/total.go", lines, 29, old))
	in.Head = HeadFiles{"shop/total.go": strings.Join(lines, "\n") + "\n"}
	return in
}

// The model is sent, after a file's hunks, the enclosing function's lines
// the hunk does not show, numbered, under a header saying they may not be
// cited; the system prompt says so too, and the critique counts them.
// A head whose lines do not match the diff's (another commit) adds none;
// nor does a file that is not in Head.
// Rules: R-CONTEXT-1.
func TestContext_EnclosingFunctionSentAfterTheHunks(t *testing.T) {
	m := &fakeModel{reply: Reply{Text: `{"summary":"ok","findings":[]}`}}
	l, _ := NewLLM(m)
	c, err := l.Review(context.Background(), headInput())
	if err != nil {
		t.Fatal(err)
	}
	user := m.reqs[0].User
	i := strings.Index(user, "Context of shop/total.go at the version's head (read only, cite none of these lines):")
	if i < 0 {
		t.Fatalf("no context in the prompt:\n%s", user)
	}
	ctx := user[i:]
	for _, want := range []string{"    12 |  func Total(items []Item,", "    13 |  \tdiscount int64) (int64, error) {", "    15 |  \tlabel := \"{not a block\"",
		"   ...  (the hunk above)", "    33 |  }"} {
		if !strings.Contains(ctx, want) {
			t.Errorf("context lacks %q:\n%s", want, ctx)
		}
	}
	for _, not := range []string{"    29 |", "    11 |", "    35 |", "func Other"} {
		if strings.Contains(ctx, not) {
			t.Errorf("context holds %q (a hunk's line, or outside the function):\n%s", not, ctx)
		}
	}
	if !strings.Contains(m.reqs[0].System, `never cite a line shown only as context`) {
		t.Error("the system prompt does not say context lines may not be cited")
	}
	if c.Context == nil || c.Context.Files != 1 || c.Context.Lines != 22-7 {
		t.Errorf("context usage %+v, want 1 file, 15 lines", c.Context)
	}

	stale := headInput()
	stale.Head["shop/total.go"] = strings.Replace(stale.Head["shop/total.go"], "fmt.Println(label, sum)", "fmt.Println(label)", 1)
	absent := headInput()
	absent.Head = HeadFiles{"shop/other.go": "package shop\n"}
	for name, in := range map[string]Input{"stale head": stale, "no head file": absent} {
		m := &fakeModel{reply: Reply{Text: `{"summary":"ok","findings":[]}`}}
		l, _ := NewLLM(m)
		c, err := l.Review(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(m.reqs[0].User, "Context of") || c.Context != nil {
			t.Errorf("%s: context sent (%+v)", name, c.Context)
		}
	}
}

// A finding on a line shown only as context is dropped; one on a hunk's
// line is kept; one on a line shown nowhere becomes the file's (line 0),
// as before.
// Rules: R-CONTEXT-1, R-CRITIC-1.
func TestContext_FindingOnAContextLineIsDropped(t *testing.T) {
	reply := `{"summary":"s","findings":[
	{"file":"shop/total.go","line":13,"severity":"error","rule":"ctx","message":"the signature is wrong."},
	{"file":"shop/total.go","line":29,"severity":"error","rule":"hunk","message":"prints the sum."},
	{"file":"shop/total.go","line":50,"severity":"warning","rule":"far","message":"somewhere else."}]}`
	m := &fakeModel{reply: Reply{Text: reply}}
	l, _ := NewLLM(m)
	c, err := l.Review(context.Background(), headInput())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, f := range c.Findings {
		got[f.Rule] = f.Line
	}
	if _, ok := got["ctx"]; ok {
		t.Errorf("a finding on a context line was kept: %+v", c.Findings)
	}
	if got["hunk"] != 29 {
		t.Errorf("the hunk's finding: %+v", c.Findings)
	}
	if l, ok := got["far"]; !ok || l != 0 {
		t.Errorf("a finding on a line not shown: %+v", c.Findings)
	}
}

// The budget goes to hunks first: with room for the hunks alone, the
// file is sent without context; context goes to files in the budget's
// order (source before tests), a region that does not fit is left out
// and counted.
// Rules: R-CONTEXT-2, R-CRITIC-3.
func TestContext_BudgetSpendsOnHunksFirst(t *testing.T) {
	in := headInput()
	test := append([]string(nil), totalGo...)
	test[0] = "package shop_test"
	old := test[28]
	test[28] = "\t\tfmt.Println(label, 2)"
	in.Diff = oneLineDiff("shop/total_test.go", test, 29, old) + in.Diff
	in.Head["shop/total_test.go"] = strings.Join(test, "\n") + "\n"
	probe := &fakeModel{reply: Reply{Text: `{"summary":"ok","findings":[]}`}}
	pl, _ := NewLLM(probe)
	full, err := pl.Review(context.Background(), in)
	if err != nil || full.Context == nil || full.Context.Files != 2 {
		t.Fatalf("with the default budget: %v %+v", err, full.Context)
	}
	sel := selectFiles(mustParse(t, in.Diff), 1<<20, in.Generated, nil)
	hunkBytes := sel.bytes
	ctxSel := selectFiles(mustParse(t, in.Diff), 1<<20, in.Generated, in.Head)
	oneCtx := (ctxSel.bytes - hunkBytes) / 2
	for _, tc := range []struct {
		budget     int
		files      int
		source     bool
		overBudget int
	}{
		{hunkBytes, 0, false, 2},
		{hunkBytes + contextHeaderBytes + oneCtx + 10, 1, true, 1},
		{1 << 20, 2, true, 0},
	} {
		s := selectFiles(mustParse(t, in.Diff), tc.budget, in.Generated, in.Head)
		if len(s.sent) != 2 {
			t.Fatalf("budget %d: %d files sent, want both (hunks first)", tc.budget, len(s.sent))
		}
		if s.ctx.Files != tc.files || s.ctx.RegionsOverBudget != tc.overBudget || s.bytes > tc.budget {
			t.Errorf("budget %d: context %+v, %d bytes; want %d files, %d regions over budget", tc.budget, s.ctx, s.bytes, tc.files, tc.overBudget)
		}
		for _, f := range s.sent {
			if f.path == "shop/total.go" && (f.context != "") != tc.source {
				t.Errorf("budget %d: the source file's context sent = %v", tc.budget, f.context != "")
			}
		}
	}
}

// The offline critic reviews the diff alone: the same critique with or
// without the head's files.
// Rules: R-CONTEXT-1.
func TestContext_OfflineCriticUnchanged(t *testing.T) {
	in := headInput()
	with, err := NewOffline().Review(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	in.Head = nil
	without, err := NewOffline().Review(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(with) != fmt.Sprint(without) || with.Context != nil {
		t.Errorf("offline critiques differ:\n%+v\n%+v", with, without)
	}
}

// The files read at the head are bounded: source before tests before the
// rest, at most the limit, the others counted; binary, deleted,
// generated, vendored and claimed-generated files and prose get none.
// Rules: R-CONTEXT-2.
func TestContextPaths_BoundedAndOnlyReviewableCode(t *testing.T) {
	add := func(p string) string {
		return fmt.Sprintf("diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -1,1 +1,2 @@\n x\n+y\n", p, p, p, p)
	}
	d := add("README.md") + add("svc/a_test.go") + add("svc/a.go") + add("vendor/x/x.go") + add("go.sum") +
		"diff --git a/old.go b/old.go\ndeleted file mode 100644\n--- a/old.go\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-x\n" +
		"diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n" + add("web/b.ts") + add("lib/c.py")
	got, more := ContextPaths(mustParse(t, d), Generated{}, 3)
	if strings.Join(got, " ") != "svc/a.go web/b.ts lib/c.py" || more != 1 {
		t.Errorf("ContextPaths = %v, %d more; want the three sources first, the test counted", got, more)
	}
	all, more := ContextPaths(mustParse(t, d), Generated{}, 10)
	if strings.Join(all, " ") != "svc/a.go web/b.ts lib/c.py svc/a_test.go" || more != 0 {
		t.Errorf("ContextPaths = %v, %d more", all, more)
	}
}
