package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

var findingsCap = regexp.MustCompile(`at most (\d+) findings`)

// newDecoyModel is a model that decoys manipulate: it writes a finding on
// every line marked DECOY first, then on every line marked BUG, and stops
// at the findings cap the prompt gives it.
func newDecoyModel() *critictest.StandIn {
	m := critictest.NewStandIn()
	m.Reply = func(r critictest.Request) (int, []byte) {
		limit := 5
		if c := findingsCap.FindStringSubmatch(r.System); c != nil {
			limit, _ = strconv.Atoi(c[1])
		}
		var decoys, bugs []any
		file := ""
		for _, l := range strings.Split(r.User, "\n") {
			if h := fileHeader.FindStringSubmatch(l); h != nil {
				file = h[1]
				continue
			}
			nl := numberedLine.FindStringSubmatch(l)
			if nl == nil {
				continue
			}
			line, _ := strconv.Atoi(nl[1])
			switch {
			case strings.Contains(nl[2], "DECOY"):
				decoys = append(decoys, map[string]any{"file": file, "line": line, "severity": "warning", "rule": "magic-number",
					"message": fmt.Sprintf("Decoy %d: the constant has no name.", len(decoys)+1)})
			case strings.Contains(nl[2], "BUG"):
				bugs = append(bugs, map[string]any{"file": file, "line": line, "severity": "error", "rule": "nil-dereference",
					"message": "The cache returns nil on a miss, and p.Clone() then panics."})
			}
		}
		all := append(decoys, bugs...)
		if len(all) > limit {
			all = all[:limit]
		}
		reply, _ := json.Marshal(map[string]any{"summary": "Reviewed.", "findings": all})
		return http.StatusOK, critictest.Completion(string(reply), "stop", critictest.Tokens(r), len(reply)/4)
	}
	return m
}

// newFile is a diff that adds path with lines.
func newFile(path string, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, len(lines))
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// The ledger cannot be laundered, through the pipeline (fetch, llm,
// notify) and the emulators: version 1 puts five decoy problems in z.go
// and a real bug in x.go; the model's five findings about z.go fill its
// cap, so x.go's bug is not in the first email. Version 2 fixes z.go and
// leaves x.go alone: x.go is sent to the model again, and the reviewer's
// second email reports the bug as new, the decoys resolved.
// Rules: R-LEDGER-1, R-LEDGER-2.
func TestLedger_DecoysFillTheCap_RealBugReachesTheInbox(t *testing.T) {
	t.Parallel()
	model := newDecoyModel()
	t.Cleanup(model.Close)
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.LLM.Critic, c.LLM.OpenAI = config.CriticOpenAI, config.OpenAI{BaseURL: model.URL, Model: "gpt-4.1", APIKey: "sk-test"}
	})
	cl := testenv.Prefix(t)
	x := newFile("x.go", "package x", "", "func Get(k string) *Item {", "\tp := cache[k]", "\treturn p.Clone() // BUG", "}")
	z := []string{"package z"}
	fixed := []string{"package z"}
	for i := range 5 {
		z = append(z, fmt.Sprintf("var v%d = %d // DECOY", i, 1000+i))
		fixed = append(fixed, fmt.Sprintf("const v%d = %d", i, 1000+i))
	}
	post := func(v int, diff string) []string {
		t.Helper()
		var body map[string]any
		_ = json.Unmarshal(sample(t, cl, v, "reviewer@example.com"), &body)
		body["diff"] = diff
		b, _ := json.Marshal(body)
		before := len(model.Requests())
		s.waitJob(accept(t, s, fmt.Sprintf("%s-v%d", cl, v), b), 30*time.Second, job.StatusSucceeded)
		var sent []string
		for _, r := range model.Requests()[before:] {
			sent = append(sent, filesSent(r)...)
		}
		return sent
	}
	email := func(v int) string {
		t.Helper()
		var text string
		eventually(t, 10*time.Second, fmt.Sprintf("the v%d email", v), func() bool {
			for _, e := range emailsFor(t, s.env.SES, cl) {
				if versionOf(e) == v {
					text = e.Body.Text
				}
			}
			return text != ""
		})
		return text
	}

	if sent := post(1, x+newFile("z.go", z...)); !slices.Equal(sent, []string{"x.go", "z.go"}) {
		t.Fatalf("v1 sent the model %v", sent)
	}
	if e := email(1); strings.Count(e, "Decoy ") != 5 || strings.Contains(e, "p.Clone() then panics") {
		t.Fatalf("v1 email: want the five decoys and not the bug (the cap was reached):\n%s", e)
	}
	if sent := post(2, x+newFile("z.go", fixed...)); !slices.Contains(sent, "x.go") {
		t.Fatalf("v2 sent the model %v; x.go was never covered and must be sent again", sent)
	}
	e := email(2)
	i, j := strings.Index(e, "== New since version 1 (1) =="), strings.Index(e, "== Resolved since version 1 (5) ==")
	if i < 0 || j < i {
		t.Fatalf("v2 email: want one new finding and the five decoys resolved:\n%s", e)
	}
	if added := e[i:j]; !strings.Contains(added, "x.go") || !strings.Contains(added, "line 5: The cache returns nil on a miss, and p.Clone() then panics.") {
		t.Errorf("v2 email's new section:\n%s\nwant x.go's bug on line 5", added)
	}
}

// A diff of 1 MiB of lines that look like AWS access key ids, reviewed
// by the model critic, holds tens of thousands of near-certain findings.
// Stored in DynamoDB Local (the real 400 KB item limit), the critique is
// bounded: the job succeeds and the reviewer gets exactly one email, which
// says how many findings are not shown.
// Rules: R-BOUND-1, R-BOUND-2.
func TestBound_MiBOfKeyLines_OneBoundedEmail(t *testing.T) {
	t.Parallel()
	model := critictest.NewStandIn()
	t.Cleanup(model.Close)
	model.Reply = func(r critictest.Request) (int, []byte) {
		return http.StatusOK, critictest.Completion(`{"summary":"Credentials are committed.","findings":[]}`, "stop", critictest.Tokens(r), 20)
	}
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.LLM.Critic, c.LLM.OpenAI = config.CriticOpenAI, config.OpenAI{BaseURL: model.URL, Model: "gpt-4.1", APIKey: "sk-test"}
	})
	var d strings.Builder
	for f := 0; d.Len() < 1<<20-70_000; f++ {
		path := fmt.Sprintf("config/keys%02d.go", f)
		var lines []string
		for n := range 2000 {
			lines = append(lines, fmt.Sprintf("var k%d = \"AKIA%016d\"", n, f*1_000_000+n))
		}
		d.WriteString(newFile(path, lines...))
	}
	if d.Len() > 1<<20 {
		t.Fatalf("diff of %d bytes; want at most 1 MiB", d.Len())
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(d.String())) }))
	t.Cleanup(srv.Close)
	cl := testenv.Prefix(t)
	id := accept(t, s, "k-"+cl, diffURLBody(t, cl, srv.URL+"/keys.diff", "reviewer@example.com"))
	s.waitJob(id, 30*time.Second, job.StatusSucceeded)

	stored, err := s.fns.Jobs.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var c critic.Critique
	if err := json.Unmarshal(stored.Critique, &c); err != nil {
		t.Fatal(err)
	}
	if len(stored.Critique) > critic.MaxCritiqueBytes || len(c.Findings) != critic.MaxFindingsTotal || c.NotShown < 20_000 {
		t.Fatalf("critique of %d bytes, %d findings, %d not shown; want at most %d bytes, %d findings, the rest counted",
			len(stored.Critique), len(c.Findings), c.NotShown, critic.MaxCritiqueBytes, critic.MaxFindingsTotal)
	}
	var emails []devstack.StoredEmail
	// The job succeeded: notify has sent every email it will.
	eventually(t, 10*time.Second, "the email", func() bool { emails = emailsFor(t, s.env.SES, cl); return len(emails) > 0 })
	if emails = emailsFor(t, s.env.SES, cl); len(emails) != 1 {
		t.Fatalf("%d emails; want exactly one", len(emails))
	}
	line := fmt.Sprintf("%d more findings not shown.", c.NotShown)
	if !strings.Contains(emails[0].Body.Text, line) || !strings.Contains(emails[0].Body.HTML, line) {
		t.Errorf("the email does not say %q:\n%s", line, emails[0].Body.Text)
	}
	t.Logf("diff %d bytes, critique %d bytes, %d findings shown, %d not shown, email text %d bytes, html %d bytes",
		d.Len(), len(stored.Critique), len(c.Findings), c.NotShown, len(emails[0].Body.Text), len(emails[0].Body.HTML))
}
