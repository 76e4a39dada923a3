package notify_test

import (
	"testing"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/storetest"
)

// Explicit versions — a generic caller's review_version without the quiet
// opt-in, an operator's rerun — are mailed to every recipient: v3 and v4
// with the same diff, each mailed (the quiet rules would have settled v4
// skipped_same_diff); v1 is not superseded by v2, nor does v2 supersede
// anything, though v2 is the head when v1's notify runs; a quiet v5 with
// v4's diff is quiet (v4 was mailed its content); and a quiet v6 is not
// held back for an explicit v7 already accepted.
// Rules: R-RERUN-2, R-RERUN-1, R-OUTBOX-8, R-QUIET-1.
func TestQuiet_ExplicitVersionsMailedToEveryRecipient(t *testing.T) {
	w := newQuietWorld(t, "cl-explicit")
	explicit := func(v int, sha string) job.Job {
		j := storetest.NewJob(w.cl, v)
		j.Recipients, j.DiffSHA256, j.Explicit = []string{"ann@example.com", "bob@example.com"}, sha, true
		storetest.Create(t, w.jobs, j, "key-explicit-"+string(rune('0'+v)), "body")
		return w.atNotify(j, offlineCritique())
	}
	v1 := explicit(1, "sha-1")
	v2 := explicit(2, "sha-2")
	w.notify(v1) // the head is v2
	w.notify(v2)
	w.notify(explicit(3, "sha-A"))
	w.notify(explicit(4, "sha-A"))
	for _, rcpt := range []string{"ann@example.com", "bob@example.com"} {
		for v := 1; v <= 4; v++ {
			if r := w.row(rcpt, v); r.Status != delivery.StatusSent {
				t.Errorf("%s v%d (explicit): %s %q, want sent", rcpt, v, r.Status, r.SkipReason)
			}
		}
	}
	if sent := w.snd.all(); len(sent) != 8 {
		t.Fatalf("sent %d emails %q, want 8: every recipient of every explicit version", len(sent), sent)
	}
	w.notify(w.accept(5, "sha-A", offlineCritique(), "ann@example.com"))
	if r := w.row("ann@example.com", 5); r.Status != delivery.StatusSkippedSameDiff || r.SkipReason != "same diff as v4" {
		t.Errorf("ann v5 (quiet, v4's diff): %s %q, want skipped_same_diff as v4", r.Status, r.SkipReason)
	}
	v6 := w.accept(6, "sha-6", offlineCritique(), "ann@example.com")
	explicit(7, "sha-7")
	w.notify(v6)
	if r := w.row("ann@example.com", 6); r.Status != delivery.StatusSent {
		t.Errorf("ann v6 (quiet, head an explicit v7): %s %q, want sent: an explicit version supersedes nothing", r.Status, r.SkipReason)
	}
}
