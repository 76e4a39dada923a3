package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
)

// threadRoot is a conversation root under the local stack's sender
// domain (CRITICIZER_MAIL_FROM's default, criticizer@example.com).
var threadRoot = regexp.MustCompile(`^<criticizer\.t\.[0-9a-f]{32}@example\.com>$`)

// Versions 1 and 2 of one change, mailed to a reviewer and to the change's
// author (the generic webhook names the author by address), through the
// local stack: each recipient's two emails share the subject, which names
// no version, and v2's References and In-Reply-To name the conversation
// root v1 carries too (SES's store keeps the headers as SES was given
// them); each recipient has a root of their own. v2's title was edited:
// its subject keeps v1's title, so Gmail and Outlook, which group by
// subject, keep one thread, and its body shows the title as it is now,
// escaped. Every email carries the
// deploy's List-Id, Auto-Submitted: auto-generated, why its recipient got
// it and the highest severity of its version's findings, and its body
// names its version.
//
// A v3 whose diff is v2's (a force-push of the same change under a new
// commit) mails no one: each recipient's row says it is v2's diff
// (R-QUIET-1), and the job succeeds.
// Rules: R-THREAD-1, R-MAIL-4, R-QUIET-1.
func TestThreads_VersionsOneConversation_FilterHeaders(t *testing.T) {
	t.Parallel()
	// The deploy's defaults for the quiet rules, without the collapse
	// window (each version here is mailed before the next is posted).
	s := startStack(t, devstack.FunctionOptions{}, quietly(0))
	ctx := context.Background()
	cl := testenv.Prefix(t)
	const reviewer, author = "rev@example.com", "ana@example.com"
	var base map[string]any
	_ = json.Unmarshal(sample(t, cl, 1), &base)
	baseDiff, _ := base["diff"].(string)
	const edited = "Add refunds & credits to invoices <v2>"
	titles := map[int]string{1: "Add refunds to invoices", 2: edited, 3: edited}
	diffs := map[int]string{
		1: baseDiff,
		2: baseDiff + "diff --git a/docs/refunds.md b/docs/refunds.md\nnew file mode 100644\n--- /dev/null\n+++ b/docs/refunds.md\n@@ -0,0 +1,2 @@\n+# Refunds\n+TODO: describe partial refunds.\n",
	}

	// step posts version v with diff and waits for its job to settle;
	// it returns the version's emails by recipient, and the highest
	// severity among the version's findings.
	step := func(v int, diff string, want job.Status) (map[string][]devstack.StoredEmail, string) {
		t.Helper()
		var body map[string]any
		_ = json.Unmarshal(sample(t, cl, v, reviewer, author), &body)
		// A caller speaking for a code host: its versions are quiet.
		body["diff"], body["author"], body["title"], body["quiet"] = diff, author, titles[v], true
		b, _ := json.Marshal(body)
		id := accept(t, s, fmt.Sprintf("%s-v%d", cl, v), b)
		s.waitJob(id, 30*time.Second, want)
		time.Sleep(500 * time.Millisecond) // let any wrong extra send land in the store
		out := map[string][]devstack.StoredEmail{}
		for _, e := range emailsFor(t, s.env.SES, cl) {
			if versionOf(e) == v {
				for _, to := range e.Destination.To {
					out[to] = append(out[to], e)
				}
			}
		}
		j, err := s.fns.Jobs.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var c critic.Critique
		if err := json.Unmarshal(j.Critique, &c); err != nil {
			t.Fatal(err)
		}
		return out, highest(c.Findings)
	}
	one := func(v int, mailed map[string][]devstack.StoredEmail, rcpt string) devstack.StoredEmail {
		t.Helper()
		if len(mailed[rcpt]) != 1 {
			t.Fatalf("v%d: %d emails to %s, want 1", v, len(mailed[rcpt]), rcpt)
		}
		return mailed[rcpt][0]
	}

	v1, sev1 := step(1, diffs[1], job.StatusSucceeded)
	v2, sev2 := step(2, diffs[2], job.StatusSucceeded)

	subject := "[Criticizer] " + cl + ": Add refunds to invoices"
	roots := map[string]string{}
	for rcpt, reason := range map[string]string{reviewer: "reviewer", author: "author"} {
		e1, e2 := one(1, v1, rcpt), one(2, v2, rcpt)
		if e1.Subject != subject || e2.Subject != subject {
			t.Errorf("%s: subjects %q and %q; want both %q", rcpt, e1.Subject, e2.Subject, subject)
		}
		root := e1.Header("References")
		if !threadRoot.MatchString(root) || e1.Header("In-Reply-To") != root {
			t.Errorf("%s v1: References %q, In-Reply-To %q; want one conversation root <criticizer.t.HEX@example.com>", rcpt, root, e1.Header("In-Reply-To"))
		}
		if refs := strings.Fields(e2.Header("References")); len(refs) != 1 || refs[0] != root || e2.Header("In-Reply-To") != root {
			t.Errorf("%s v2: References %q, In-Reply-To %q; want v1's root %q", rcpt, e2.Header("References"), e2.Header("In-Reply-To"), root)
		}
		if other, ok := roots[root]; ok {
			t.Errorf("%s and %s share the conversation root %s", rcpt, other, root)
		}
		roots[root] = rcpt
		for v, e := range map[int]devstack.StoredEmail{1: e1, 2: e2} {
			sev := map[int]string{1: sev1, 2: sev2}[v]
			for h, want := range map[string]string{
				"List-Id": "Criticizer <criticizer.example.com>", "Auto-Submitted": "auto-generated",
				"X-Criticizer-Reason": reason, "X-Criticizer-Severity": sev,
			} {
				if got := e.Header(h); got != want {
					t.Errorf("%s v%d: %s %q, want %q", rcpt, v, h, got, want)
				}
			}
			if !strings.Contains(e.Body.HTML, fmt.Sprintf("&middot; version %d</div>", v)) {
				t.Errorf("%s v%d: the HTML body does not name the version", rcpt, v)
			}
			if want := map[int]string{1: ">Add refunds to invoices</a></h1>", 2: ">Add refunds &amp; credits to invoices &lt;v2&gt;</a></h1>"}[v]; !strings.Contains(e.Body.HTML, want) {
				t.Errorf("%s v%d: the HTML body does not show the version's title %q", rcpt, v, want)
			}
		}
	}

	// v3: v2's diff again, under a new version: nobody is mailed.
	v3, _ := step(3, diffs[2], job.StatusSucceeded)
	if len(v3) != 0 {
		t.Errorf("v3 with v2's diff mailed %d recipients, want no one", len(v3))
	}
	clKey := job.ChangelistKey("generic", cl)
	for _, rcpt := range []string{reviewer, author} {
		r, err := s.fns.Deliveries.Get(ctx, delivery.ID(clKey, rcpt, 3))
		if err != nil {
			t.Fatalf("v3's row for %s: %v", rcpt, err)
		}
		if r.Status != delivery.StatusSkippedSameDiff || r.SkipReason != "same diff as v2" {
			t.Errorf("v3's row for %s: %s %q, want skipped_same_diff %q", rcpt, r.Status, r.SkipReason, "same diff as v2")
		}
	}
}

// highest is the most severe of the findings' severities, as the
// X-Criticizer-Severity header names it.
func highest(fs []critic.Finding) string {
	out := "none"
	for _, f := range fs {
		switch {
		case f.Severity == critic.SeverityError:
			return "error"
		case f.Severity == critic.SeverityWarning:
			out = "warning"
		case out == "none":
			out = "info"
		}
	}
	return out
}
