package notify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/notify"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/store/memstore"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

// prefsCritique has one error, two warnings and one info.
func prefsCritique() critic.Critique {
	return critic.Critique{Critic: "offline/v1", Summary: "Four findings.", Files: 1, Additions: 9, Findings: []critic.Finding{
		{File: "a.go", Line: 1, Severity: critic.SeverityError, Rule: "secret-added", Message: "A secret."},
		{File: "a.go", Line: 2, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "A print."},
		{File: "a.go", Line: 3, Severity: critic.SeverityWarning, Rule: "long-line", Message: "A long line."},
		{File: "a.go", Line: 4, Severity: critic.SeverityInfo, Rule: "todo-added", Message: "A TODO."},
	}}
}

func save(t *testing.T, r *memstore.Preferences, addr string, edit func(*prefs.Preferences)) {
	t.Helper()
	p, _ := r.Preferences(context.Background(), unsubscribe.RecipientID(addr))
	edit(&p)
	if _, err := r.SavePreferences(context.Background(), unsubscribe.RecipientID(addr), p); err != nil {
		t.Fatal(err)
	}
}

// A reader's own minimum severity leaves lower findings out of their
// email only, and the email says how many; the other reader of the same
// version is mailed every finding. The deployment's and the repository's
// minimum stay floors: a reader asking for less than the floor is mailed
// what the floor lets through, and their email says nothing of their own
// setting. The footer links each reader's own preference page.
// Rules: R-PREF-3, R-PREF-2.
func TestPreferences_OwnMinimumNarrowsThatReadersEmailOnly(t *testing.T) {
	w := newDismissWorld(t, "pref-1", nil)
	rcpts := memstore.NewPreferences()
	w.n.Recipients = rcpts
	setGates(t, w.n, w.gates)
	signer, err := prefs.NewSigner("0123456789abcdef0123456789abcdef-test")
	if err != nil {
		t.Fatal(err)
	}
	w.n.Prefs = signer
	save(t, rcpts, "ann@example.com", func(p *prefs.Preferences) { p.MinSeverity = prefs.SeverityError })
	if err := w.version(1, prefsCritique()); err != nil {
		t.Fatal(err)
	}
	ann, bo := w.box.last(t, "ann@example.com"), w.box.last(t, "bo@example.com")
	for part, body := range map[string]string{"html": ann.HTML, "text": ann.Text} {
		if strings.Contains(body, "debug-print") || strings.Contains(body, "todo-added") || !strings.Contains(body, "secret-added") {
			t.Errorf("ann's %s has findings below error, or lacks the error", part)
		}
		if !strings.Contains(body, "3 findings below error are left out by your email preferences.") {
			t.Errorf("ann's %s does not say what her minimum left out", part)
		}
	}
	if ann.Severity != "error" {
		t.Errorf("ann's severity header %q", ann.Severity)
	}
	for _, rule := range []string{"secret-added", "debug-print", "long-line", "todo-added"} {
		if !strings.Contains(bo.Text, rule) {
			t.Errorf("bo's email lacks %s", rule)
		}
	}
	if strings.Contains(bo.Text, "left out by your email preferences") {
		t.Error("bo's email speaks of preferences he never set")
	}
	// Each footer links its own reader's page, which names them by id.
	links := map[string]string{}
	for who, m := range map[string]string{"ann@example.com": ann.Text, "bo@example.com": bo.Text} {
		i := strings.Index(m, "Email preferences (delivery, minimum severity, muted repositories): https://api.example.com/preferences/")
		if i < 0 {
			t.Fatalf("%s's footer has no preference link:\n%s", who, m)
		}
		link := strings.Fields(m[i:])[7]
		c, err := signer.Verify(strings.TrimPrefix(link, "https://api.example.com/preferences/"), w.now)
		if err != nil || c.RecipientID != unsubscribe.RecipientID(who) || c.Repository != unsubscribe.Repository("generic", "pref-1") {
			t.Fatalf("%s's link %s: %+v, %v", who, link, c, err)
		}
		links[who] = link
	}
	if links["ann@example.com"] == links["bo@example.com"] {
		t.Fatal("both readers share a link")
	}

	// Floors: the deployment mails warnings and up; ann asks for info
	// (less than the floor: nothing of hers to say), bo for error.
	w.n.MinSeverity = critic.SeverityWarning
	save(t, rcpts, "ann@example.com", func(p *prefs.Preferences) { p.MinSeverity = prefs.SeverityInfo })
	save(t, rcpts, "bo@example.com", func(p *prefs.Preferences) { p.MinSeverity = prefs.SeverityError })
	if err := w.version(2, prefsCritique()); err != nil {
		t.Fatal(err)
	}
	ann, bo = w.box.last(t, "ann@example.com"), w.box.last(t, "bo@example.com")
	if strings.Contains(ann.Text, "todo-added") || !strings.Contains(ann.Text, "debug-print") || strings.Contains(ann.Text, "your email preferences") ||
		!strings.Contains(ann.Text, "1 finding below warning not shown.") {
		t.Errorf("ann, asking below the deployment's floor, got:\n%s", ann.Text)
	}
	if strings.Contains(bo.Text, "debug-print") || !strings.Contains(bo.Text, "2 findings below error are left out by your email preferences.") {
		t.Errorf("bo, asking for errors over a warning floor, got:\n%s", bo.Text)
	}
}

// A muted repository and unsubscribe-all settle the row without a send,
// as skipped_unsubscribed, whatever else the record says; a mute of
// another repository changes nothing.
// Rules: R-PREF-3, R-UNSUB-2.
func TestPreferences_MutedOrUnsubscribedIsNotMailed(t *testing.T) {
	w := newDismissWorld(t, "pref-2", nil)
	rcpts := memstore.NewPreferences()
	w.n.Recipients = rcpts
	setGates(t, w.n, w.gates)
	ctx := context.Background()
	if err := rcpts.Mute(ctx, unsubscribe.RecipientID("ann@example.com"), unsubscribe.Repository("generic", "pref-2")); err != nil {
		t.Fatal(err)
	}
	if err := rcpts.Mute(ctx, unsubscribe.RecipientID("bo@example.com"), "github:someone/else"); err != nil {
		t.Fatal(err)
	}
	if err := w.version(1, prefsCritique()); err != nil {
		t.Fatal(err)
	}
	if w.box.count("ann@example.com") != 0 || w.box.count("bo@example.com") != 1 {
		t.Fatalf("sent to ann %d, bo %d; want 0 and 1", w.box.count("ann@example.com"), w.box.count("bo@example.com"))
	}
	row, err := w.rows.Get(ctx, w.id("ann@example.com", 1))
	if err != nil || row.Status != delivery.StatusSkippedUnsubscribed || row.SkipReason != "repository" {
		t.Fatalf("ann's row %s %q (%v), want skipped_unsubscribed for the repository", row.Status, row.SkipReason, err)
	}
	save(t, rcpts, "bo@example.com", func(p *prefs.Preferences) { p.UnsubscribedAll, p.Mode = true, prefs.Daily })
	if err := w.version(2, prefsCritique()); err != nil {
		t.Fatal(err)
	}
	if w.box.count("bo@example.com") != 1 {
		t.Fatal("bo, unsubscribed from all, was mailed")
	}
	row, err = w.rows.Get(ctx, w.id("bo@example.com", 2))
	if err != nil || row.Status != delivery.StatusSkippedUnsubscribed || row.SkipReason != "all" {
		t.Fatalf("bo's row %s %q (%v)", row.Status, row.SkipReason, err)
	}
	if j, _ := w.jobs.Get(ctx, job.NewID("generic", "pref-2", 2)); j.Status != job.StatusSucceeded {
		t.Fatalf("job %s, want succeeded (skipped rows are settled)", j.Status)
	}
}

// A reader's own minimum severity applies to R-QUIET-2: a quiet version
// whose only news is below their minimum (an info finding new, an info
// finding resolved) has nothing new for them, and their row is settled
// skipped_nothing_new when it is created, never sent; a reader without
// that minimum is mailed it. A version with news at their level is
// mailed; an explicit version is mailed whatever it holds (R-RERUN-2).
// Rules: R-QUIET-2, R-PREF-3.
func TestPreferences_OwnMinimumQuietsAVersionWithNothingNewAtIt(t *testing.T) {
	for _, explicit := range []bool{false, true} {
		w := newDismissWorld(t, "pref-quiet", &notify.QuietConfig{})
		w.explicit = explicit
		rcpts := memstore.NewPreferences()
		w.n.Recipients = rcpts
		setGates(t, w.n, w.gates)
		setGates(t, w.n, w.gates)
		save(t, rcpts, "ann@example.com", func(p *prefs.Preferences) { p.MinSeverity = prefs.SeverityWarning })
		if err := w.version(1, critic.Critique{Critic: "offline/v1", Summary: "s", Findings: []critic.Finding{debugV1, todoV1}}); err != nil {
			t.Fatal(err)
		}
		// v2: a new info finding, the old info one resolved, the warning
		// unchanged: news to bo, none to ann.
		info := critic.Finding{File: "c.go", Line: 5, Severity: critic.SeverityInfo, Rule: "todo-added", Message: "Another TODO.", Anchor: "line-todo2", New: true}
		v2 := rerun(1, debugV1, info)
		v2.Changes.ResolvedCount, v2.Changes.Resolved = 1, []critic.Finding{todoV1}
		if err := w.version(2, v2); err != nil {
			t.Fatal(err)
		}
		row, err := w.rows.Get(context.Background(), w.id("ann@example.com", 2))
		if err != nil {
			t.Fatal(err)
		}
		if w.box.count("bo@example.com") != 2 {
			t.Errorf("bo got %d emails, want v1 and v2", w.box.count("bo@example.com"))
		}
		if explicit {
			if row.Status != delivery.StatusSent || w.box.count("ann@example.com") != 2 {
				t.Errorf("explicit v2 to ann: %s, %d emails; want it mailed", row.Status, w.box.count("ann@example.com"))
			}
			continue
		}
		if row.Status != delivery.StatusSkippedNothingNew || row.Attempts != 0 || w.box.count("ann@example.com") != 1 ||
			!strings.Contains(row.SkipReason, "nothing new since v1") {
			t.Errorf("ann's v2: %s %q, %d emails; want skipped_nothing_new, only v1 sent", row.Status, row.SkipReason, w.box.count("ann@example.com"))
		}
		// v3: a new warning: news at ann's level.
		warn := critic.Finding{File: "d.go", Line: 8, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "log.Print left in.", Anchor: "line-print", New: true}
		if err := w.version(3, rerun(2, debugV1, info, warn)); err != nil {
			t.Fatal(err)
		}
		if w.box.count("ann@example.com") != 2 || !strings.Contains(w.box.last(t, "ann@example.com").Text, "log.Print left in.") {
			t.Errorf("ann's v3, with a new warning, was not mailed")
		}
	}
}
