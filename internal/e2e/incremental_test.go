package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/critic/openai"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// svcFile is one file of the change: a handler with a planted bug, which
// a push may fix, move down (two lines inserted above it) or join with a
// second bug.
type svcFile struct {
	n                 int
	fixed, moved, two bool
}

func (f svcFile) path() string { return fmt.Sprintf("svc/handler%02d.go", f.n) }

func (f svcFile) lines() []string {
	id := fmt.Sprintf("%02d", f.n)
	out := []string{"package svc", "", "import (", "\t\"context\"", "\t\"fmt\"", ")", ""}
	if f.moved {
		out = append(out, "// Handler"+id+" is called by the router for every order of kind "+id+";", "// it must not block.")
	}
	out = append(out,
		"// Handler"+id+" prices an order of kind "+id+".",
		"func Handler"+id+"(ctx context.Context, in Order"+id+") (Price"+id+", error) {",
		"\tif err := in.Validate(); err != nil {",
		"\t\treturn Price"+id+"{}, fmt.Errorf(\"handler"+id+": %w\", err)",
		"\t}",
		"\trate, err := rates.Lookup(ctx, in.Currency)",
		"\tif err != nil {",
		"\t\treturn Price"+id+"{}, fmt.Errorf(\"handler"+id+": rate: %w\", err)",
		"\t}")
	if f.fixed {
		out = append(out, "\ttotal, ok := mulChecked(in.Cents, int64(in.Quantity))", "\tif !ok {", "\t\treturn Price"+id+"{}, errOverflow", "\t}")
	} else {
		out = append(out, "\ttotal := in.Cents * int64(in.Quantity) // BUG overflow")
	}
	if f.two {
		out = append(out, "\tgo audit(ctx, in) // BUG goroutine")
	}
	return append(out,
		"\treturn Price"+id+"{Cents: total * rate.Num / rate.Den, Currency: in.Currency}, nil",
		"}")
}

func (f svcFile) diff() string {
	ls := f.lines()
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", f.path(), f.path(), f.path(), len(ls))
	for _, l := range ls {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

func changeDiff(files []svcFile) string {
	var b strings.Builder
	for _, f := range files {
		b.WriteString(f.diff())
	}
	return b.String()
}

// bugModel is the model: it flags every line marked BUG in the files it
// is sent, in words that change with every request (as a model rewords
// itself), and bills the prompt's tokens (critictest.Tokens).
type bugModel struct {
	*critictest.StandIn
	mu sync.Mutex
	n  int
}

var (
	fileHeader   = regexp.MustCompile(`(?m)^File: (\S+) \(`)
	numberedLine = regexp.MustCompile(`^\s*(\d+) [+ ]  (.*)$`)
)

func newBugModel() *bugModel {
	m := &bugModel{StandIn: critictest.NewStandIn()}
	m.Reply = func(r critictest.Request) (int, []byte) {
		m.mu.Lock()
		m.n++
		n := m.n
		m.mu.Unlock()
		var findings []any
		file := ""
		for _, l := range strings.Split(r.User, "\n") {
			if h := fileHeader.FindStringSubmatch(l); h != nil {
				file = h[1]
				continue
			}
			nl := numberedLine.FindStringSubmatch(l)
			if nl == nil || !strings.Contains(nl[2], "// BUG") {
				continue
			}
			line, _ := strconv.Atoi(nl[1])
			rule, msg := "integer-overflow", "Cents times quantity overflows int64 for a large order"
			if strings.Contains(nl[2], "goroutine") {
				rule, msg = "goroutine-leak", "The audit goroutine outlives the request when ctx is canceled"
			}
			findings = append(findings, map[string]any{"file": file, "line": line, "severity": "error", "rule": rule,
				"message": fmt.Sprintf("%s (answer %d).", msg, n)})
		}
		reply, _ := json.Marshal(map[string]any{"summary": "Planted bugs.", "findings": findings})
		return http.StatusOK, critictest.Completion(string(reply), "stop", critictest.Tokens(r), len(reply)/4)
	}
	return m
}

// filesSent are the files a request showed the model.
func filesSent(r critictest.Request) []string {
	var out []string
	for _, m := range fileHeader.FindAllStringSubmatch(r.User, -1) {
		out = append(out, m[1])
	}
	return out
}

// A 20-file change pushed 5 times, 2 files changed per push, through the
// pipeline with an OpenAI-compatible model: each rerun sends the model
// only the 2 changed files, the other 18 keep their findings (words and
// all, from the review that made them), and its tokens are a fraction of
// a full review of the same version's diff (printed); the findings are
// those a full review finds. The last rerun's email says what is new (a
// second bug), unchanged (the 18 carried, and a bug two inserted lines
// moved, reworded by the model) and resolved (a fixed bug) since the
// version before. An operator's rerun then reviews every file again.
// Rules: R-COST-3, R-MAIL-3, R-CRITIC-6.
func TestIncrementalReruns_OnlyChangedFilesSent_EmailSaysWhatChanged(t *testing.T) {
	t.Parallel()
	model := newBugModel()
	t.Cleanup(model.Close)
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.LLM.Critic, c.LLM.OpenAI = config.CriticOpenAI, config.OpenAI{BaseURL: model.URL, Model: "gpt-4.1", APIKey: "sk-test"}
		// Every planted bug is kept, so that a finding carried over is
		// never one the cap dropped.
		c.LLM.MaxFindings, c.AdminAPIKey = 50, adminKey
	})
	ctx := context.Background()
	cl := testenv.Prefix(t)
	files := make([]svcFile, 20)
	for i := range files {
		files[i].n = i
	}
	diffs := map[int]string{}
	critiques := map[int]critic.Critique{}
	post := func(v int) {
		t.Helper()
		var body map[string]any
		_ = json.Unmarshal(sample(t, cl, v, "reviewer@example.com"), &body)
		diffs[v] = changeDiff(files)
		body["diff"] = diffs[v]
		b, _ := json.Marshal(body)
		before := len(model.Requests())
		id := accept(t, s, fmt.Sprintf("%s-v%d", cl, v), b)
		s.waitJob(id, 30*time.Second, job.StatusSucceeded)
		reqs := model.Requests()[before:]
		if len(reqs) != 1 {
			t.Fatalf("v%d: %d model requests; want 1", v, len(reqs))
		}
		want := []string{}
		for _, f := range files {
			if v == 1 || f.n/2 == v-2 {
				want = append(want, f.path())
			}
		}
		if got := filesSent(reqs[0]); !slices.Equal(got, want) {
			t.Fatalf("v%d sent the model %d files %v; want %v", v, len(got), got, want)
		}
		j, err := s.fns.Jobs.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var c critic.Critique
		if err := json.Unmarshal(j.Critique, &c); err != nil {
			t.Fatal(err)
		}
		critiques[v] = c
	}

	post(1)
	for v := 2; v <= 5; v++ {
		// Push v changes files 2(v-2) and 2(v-2)+1: the first bug is
		// fixed; in the second, two lines above move it and a second bug
		// is added.
		a, b := 2*(v-2), 2*(v-2)+1
		files[a].fixed = true
		files[b].moved, files[b].two = true, true
		post(v)
		ch := critiques[v].Changes
		if ch == nil || ch.Since != v-1 || ch.Reviewed != 2 || ch.Carried != 18 || ch.New != 1 || ch.Unchanged != 19 || ch.ResolvedCount != 1 {
			t.Fatalf("v%d changes %+v; want since v%d: 2 reviewed, 18 carried, 1 new, 19 unchanged, 1 resolved", v, ch, v-1)
		}
	}

	// What a full review of each rerun's diff costs, through the same
	// model and critic settings.
	om, err := openai.New(openai.Config{BaseURL: model.URL, Model: "gpt-4.1", APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	full, err := critic.NewLLM(om, critic.WithLLMMaxFindings(50))
	if err != nil {
		t.Fatal(err)
	}
	incTokens, fullTokens := 0, 0
	t.Logf("%-8s %-14s %-16s %-18s %s", "VERSION", "FILES SENT", "INPUT TOKENS", "FULL REVIEW TOKENS", "RATIO")
	t.Logf("%-8s %-14d %-16d %-18s %s", "v1", 20, critiques[1].Usage.InputTokens, "(is one)", "")
	for v := 2; v <= 5; v++ {
		fc, err := full.Review(ctx, critic.Input{ChangelistID: cl, ReviewVersion: v, Title: "Add refunds to invoices", Author: "ana",
			URL: "https://review.example.com/c/billing/+/1042", Diff: diffs[v]})
		if err != nil {
			t.Fatal(err)
		}
		inc := critiques[v].Usage.InputTokens
		if inc >= fc.Usage.InputTokens {
			t.Errorf("v%d: %d tokens, not fewer than a full review's %d", v, inc, fc.Usage.InputTokens)
		}
		incTokens, fullTokens = incTokens+inc, fullTokens+fc.Usage.InputTokens
		t.Logf("%-8s %-14d %-16d %-18d %.1f%%", fmt.Sprintf("v%d", v), critiques[v].Changes.Reviewed, inc, fc.Usage.InputTokens, 100*float64(inc)/float64(fc.Usage.InputTokens))
		// The same findings as a full review: file, line and rule.
		key := func(fs []critic.Finding) []string {
			var out []string
			for _, f := range fs {
				out = append(out, fmt.Sprintf("%s:%d:%s", f.File, f.Line, f.Rule))
			}
			slices.Sort(out)
			return out
		}
		if got, want := key(critiques[v].Findings), key(fc.Findings); !slices.Equal(got, want) {
			t.Errorf("v%d findings %v; a full review finds %v", v, got, want)
		}
	}
	t.Logf("reruns v2-v5: %d input tokens against %d for full re-reviews: %.1f%% (goal ≤ 30%%)", incTokens, fullTokens, 100*float64(incTokens)/float64(fullTokens))
	eventually(t, 5*time.Second, "the rerun metrics", func() bool {
		return countLines(s.logText(), `"CloudWatchMetrics"`, `"FilesReviewed":2`, `"FilesCarried":18`, `"ModelInputTokens"`) >= 4
	})

	// The email of v5, compared with v4.
	var email string
	eventually(t, 10*time.Second, "the v5 email", func() bool {
		for _, e := range emailsFor(t, s.env.SES, cl) {
			if versionOf(e) == 5 {
				email = e.Body.Text
			}
		}
		return email != ""
	})
	section := func(start, end string) string {
		i := strings.Index(email, start)
		j := strings.Index(email, end)
		if i < 0 || j < i {
			t.Fatalf("no section %q..%q in the email:\n%s", start, end, email)
		}
		return email[i:j]
	}
	if !strings.Contains(email, "Since version 4: 1 new, 19 unchanged, 1 resolved. 2 of 20 files changed and were reviewed again; the findings on the other 18 are carried over.") {
		t.Errorf("the email does not say what changed:\n%s", email)
	}
	added := section("== New since version 4 (1) ==", "== Unchanged since version 4 (19) ==")
	same := section("== Unchanged since version 4 (19) ==", "== Resolved since version 4 (1) ==")
	gone := section("== Resolved since version 4 (1) ==", "\n--\n")
	if !strings.Contains(added, "svc/handler07.go") || !strings.Contains(added, "line 20: The audit goroutine outlives") || strings.Count(added, "[error]") != 1 {
		t.Errorf("new section:\n%s\nwant handler07's second bug, line 20", added)
	}
	// The moved bug: reviewed again, at its new line, in the model's new
	// words; the 18 others: word for word as v1's model wrote them.
	if !strings.Contains(same, "line 19: Cents times quantity overflows int64 for a large order (answer 5).") || strings.Count(same, "[error]") != 19 ||
		strings.Count(same, "(answer 1).") != 12 || strings.Contains(same, "handler06.go") {
		t.Errorf("unchanged section:\n%s", same)
	}
	if !strings.Contains(gone, "svc/handler06.go") || !strings.Contains(gone, "was line 17: Cents times quantity overflows") || strings.Count(gone, "[error]") != 1 {
		t.Errorf("resolved section:\n%s", gone)
	}

	// An operator's rerun (v6, the same diff) reviews every file again and
	// compares with v5.
	before := len(model.Requests())
	code, b := s.admin(http.MethodPost, "/admin/rerun", adminKey, map[string]any{"source": "generic", "changelist_id": cl, "reason": "e2e: the model had a bad day"})
	var acc api.RerunAccepted
	if code != http.StatusAccepted || json.Unmarshal(b, &acc) != nil || acc.ReviewVersion != 6 {
		t.Fatalf("rerun: %d %s", code, b)
	}
	s.waitJob(acc.JobID, 30*time.Second, job.StatusSucceeded)
	reqs := model.Requests()[before:]
	if len(reqs) != 1 || len(filesSent(reqs[0])) != 20 {
		t.Fatalf("the operator's rerun made %d requests; want 1 with every file", len(reqs))
	}
	j, err := s.fns.Jobs.Get(ctx, acc.JobID)
	if err != nil {
		t.Fatal(err)
	}
	var c critic.Critique
	if err := json.Unmarshal(j.Critique, &c); err != nil {
		t.Fatal(err)
	}
	if ch := c.Changes; ch == nil || ch.Since != 5 || ch.Reviewed != 20 || ch.Carried != 0 || ch.Unchanged != 20 || ch.New != 0 || ch.ResolvedCount != 0 {
		t.Errorf("operator's rerun changes %+v; want since v5, all 20 reviewed, 20 unchanged", c.Changes)
	}
}
