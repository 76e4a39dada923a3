package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store"
)

// DigestRows is an outbox that keeps the daily digest's rows too.
type DigestRows interface {
	store.Deliveries
	store.Digests
}

// DigestOpener opens an empty digest store for one test, with clock now
// (time.Now if nil).
type DigestOpener func(t *testing.T, now store.Clock) DigestRows

// Digests runs the digest rows' conformance suite: each case on a store
// of its own.
func Digests(t *testing.T, open DigestOpener) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, DigestOpener)
	}{
		{"AddToDigest_CreatesOpen_EachEntryOnce", addToDigestCreatesOpenEachEntryOnce},
		{"AddToDigest_ClosedOrFull_Refused", addToDigestClosedOrFullRefused},
		{"CloseDigest_OnlyWhatWasRead_ThenADeliveryRow", closeDigestOnlyWhatWasReadThenADeliveryRow},
		{"CloseDigest_RacingAdds_NoEntryDroppedOrTaken", closeDigestRacingAddsNoEntryDroppedOrTaken},
		{"DueDigests_DueOpenOrClosedNeverClaimed", dueDigestsDueOpenOrClosedNeverClaimed},
		{"SettleDigested_UnsentOnly_MoveFromTheNamedDigest", settleDigestedUnsentOnlyMoveFromTheNamedDigest},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, open) })
	}
}

var digestDue = time.Date(2026, 6, 10, 9, 0, 0, 0, time.UTC)

// newDigest is the open digest of r@example.com due at due.
func newDigest(due time.Time) delivery.Row {
	return delivery.Row{ID: delivery.DigestID("r@example.com", due), Recipient: "R@Example.com", Period: due.Format(time.DateOnly), DueAt: due}
}

// R-DIGEST-2: the first entry creates the digest open, with its
// recipient, period and due time; an entry added again is one entry.
func addToDigestCreatesOpenEachEntryOnce(t *testing.T, open DigestOpener) {
	d := open(t, nil)
	ctx := context.Background()
	g := newDigest(digestDue)
	for _, e := range []string{"d_1", "d_1", "d_2", "d_1"} {
		if _, err := d.AddToDigest(ctx, g, e, 10); err != nil {
			t.Fatalf("add %s: %v", e, err)
		}
	}
	r, err := d.Get(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(r.Entries)
	if r.Status != delivery.StatusOpen || r.Recipient != "r@example.com" || r.Period != "2026-06-10" || !r.DueAt.Equal(digestDue) ||
		fmt.Sprint(r.Entries) != "[d_1 d_2]" || r.Attempts != 0 || !r.IsDigest() || !r.AwaitsClose() || r.CreatedAt.IsZero() {
		t.Fatalf("digest after adds: %+v", r)
	}
	if delivery.Decide(r, time.Now()) == delivery.Claim {
		t.Fatal("an open digest must not be claimable")
	}
	if _, err := d.Claim(ctx, g.ID, "tok", time.Minute); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("claim of an open digest: %v, want ErrConflict", err)
	}
}

// R-DIGEST-2: a digest that is closed, or full, takes no new entry
// (ErrConflict, with the digest as it is); one it holds is still
// reported held.
func addToDigestClosedOrFullRefused(t *testing.T, open DigestOpener) {
	d := open(t, nil)
	ctx := context.Background()
	g := newDigest(digestDue)
	for _, e := range []string{"d_1", "d_2"} {
		if _, err := d.AddToDigest(ctx, g, e, 2); err != nil {
			t.Fatal(err)
		}
	}
	r, err := d.AddToDigest(ctx, g, "d_3", 2)
	if !errors.Is(err, store.ErrConflict) || len(r.Entries) != 2 || r.HasEntry("d_3") {
		t.Fatalf("add to a full digest: %v (%v)", err, r.Entries)
	}
	if r, err := d.AddToDigest(ctx, g, "d_2", 2); err != nil || !r.HasEntry("d_2") {
		t.Fatalf("an entry it holds, added again: %v", err)
	}
	if _, err := d.CloseDigest(ctx, g.ID, 2, store.DigestClose{Status: delivery.StatusSkippedEmpty, Reason: "2 muted"}); err != nil {
		t.Fatal(err)
	}
	r, err = d.AddToDigest(ctx, g, "d_4", 10)
	if !errors.Is(err, store.ErrConflict) || r.Status != delivery.StatusSkippedEmpty || r.HasEntry("d_4") {
		t.Fatalf("add to a closed digest: %v (%s %v)", err, r.Status, r.Entries)
	}
	if r, err := d.AddToDigest(ctx, g, "d_1", 10); err != nil || !r.HasEntry("d_1") {
		t.Fatalf("an entry the closed digest holds: %v", err)
	}
}

// R-DIGEST-1, R-DIGEST-3: a digest closes only on the entries it was
// read with, with its message rendered once; closed pending it is an
// delivery row: claimed, marked sent, never claimed again. A repeat of the
// same close (an SDK retry) is recognised; another close is refused.
func closeDigestOnlyWhatWasReadThenADeliveryRow(t *testing.T, open DigestOpener) {
	d := open(t, nil)
	ctx := context.Background()
	g := newDigest(digestDue)
	if _, err := d.AddToDigest(ctx, g, "d_1", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := d.AddToDigest(ctx, g, "d_2", 10); err != nil {
		t.Fatal(err)
	}
	msg := delivery.Message{Subject: "[Criticizer] Daily digest", HTML: "<p>2</p>", Text: "2", TemplateVersion: "digest/v1", ContentSHA256: "c2",
		UnsubscribeURL: "https://x.example/u/t", Severity: "error"}
	if _, err := d.CloseDigest(ctx, g.ID, 1, store.DigestClose{Status: delivery.StatusPending, Message: msg}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("close on a stale count: %v, want ErrConflict", err)
	}
	r, err := d.CloseDigest(ctx, g.ID, 2, store.DigestClose{Status: delivery.StatusPending, Message: msg})
	if err != nil || r.Status != delivery.StatusPending || r.Message != msg {
		t.Fatalf("close: %v %+v", err, r)
	}
	if r, err := d.CloseDigest(ctx, g.ID, 2, store.DigestClose{Status: delivery.StatusPending, Message: msg}); err != nil || r.Message != msg {
		t.Fatalf("the same close again: %v", err)
	}
	other := msg
	other.ContentSHA256 = "c3"
	if _, err := d.CloseDigest(ctx, g.ID, 2, store.DigestClose{Status: delivery.StatusPending, Message: other}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("another close: %v, want ErrConflict", err)
	}
	if got, _ := d.Get(ctx, g.ID); got.Message != msg || !got.AwaitsClose() || delivery.Decide(got, time.Now()) != delivery.Claim {
		t.Fatalf("closed digest as read: %+v", got)
	}
	if _, err := d.Claim(ctx, g.ID, "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	r, err = d.MarkSent(ctx, g.ID, "tok", "ses-g")
	if err != nil || r.Status != delivery.StatusSent || r.NotificationID != "ses-g" || r.AwaitsClose() {
		t.Fatalf("mark: %v %+v", err, r)
	}
	if _, err := d.Claim(ctx, g.ID, "again", time.Minute); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("claim of a sent digest: %v", err)
	}
}

// R-DIGEST-2: adds racing a close: every entry whose add was taken is in
// the digest as closed, and every refused one is not — an entry is never
// dropped by a close it raced, nor held by a digest that refused it.
func closeDigestRacingAddsNoEntryDroppedOrTaken(t *testing.T, open DigestOpener) {
	d := open(t, nil)
	ctx := context.Background()
	g := newDigest(digestDue)
	if _, err := d.AddToDigest(ctx, g, "d_0", 100); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	taken := make([]bool, 12)
	for i := 1; i < len(taken); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := d.AddToDigest(ctx, g, fmt.Sprintf("d_%d", i), 100)
			if err != nil && !errors.Is(err, store.ErrConflict) {
				t.Error(err)
			}
			taken[i] = err == nil
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			r, err := d.Get(ctx, g.ID)
			if err != nil {
				t.Error(err)
				return
			}
			_, err = d.CloseDigest(ctx, g.ID, len(r.Entries), store.DigestClose{Status: delivery.StatusSkippedEmpty, Reason: "test"})
			if err == nil {
				return
			}
			if !errors.Is(err, store.ErrConflict) {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	r, err := d.Get(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	taken[0] = true
	for i, ok := range taken {
		if held := r.HasEntry(fmt.Sprintf("d_%d", i)); held != ok {
			t.Errorf("entry d_%d: add taken %t, held by the closed digest %t", i, ok, held)
		}
	}
}

// R-DIGEST-3: the sweeper is handed the digests due by then that are
// open, or closed and never claimed — not one due later, not one settled
// at its close, not one claimed (a row in flight, Unsettled's).
func dueDigestsDueOpenOrClosedNeverClaimed(t *testing.T, open DigestOpener) {
	d := open(t, nil)
	ctx := context.Background()
	add := func(due time.Time, rcpt string) string {
		g := newDigest(due)
		g.ID, g.Recipient = delivery.DigestID(rcpt, due), rcpt
		if _, err := d.AddToDigest(ctx, g, "d_"+rcpt, 10); err != nil {
			t.Fatal(err)
		}
		return g.ID
	}
	past, later := digestDue.Add(-time.Hour), digestDue.Add(time.Hour)
	openDue, openLater := add(past, "a@example.com"), add(later, "b@example.com")
	pending, empty, claimed := add(past, "c@example.com"), add(digestDue, "d@example.com"), add(past, "e@example.com")
	msg := delivery.Message{Subject: "s", HTML: "h", Text: "t", TemplateVersion: "digest/v1", ContentSHA256: "c"}
	for _, id := range []string{pending, claimed} {
		if _, err := d.CloseDigest(ctx, id, 1, store.DigestClose{Status: delivery.StatusPending, Message: msg}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.CloseDigest(ctx, empty, 1, store.DigestClose{Status: delivery.StatusSkippedEmpty, Reason: "1 muted"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(ctx, claimed, "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Ensure(ctx, NewRow("d_version")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a second sweep finds the same
		var got []string
		if err := d.DueDigests(ctx, digestDue, func(r delivery.Row) error {
			got = append(got, r.ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		want := []string{openDue, pending}
		slices.Sort(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("due digests %v; want %v (not %s due later, %s settled, %s claimed)", got, want, openLater, empty, claimed)
		}
	}
}

// R-DIGEST-2: a version row goes into a digest only if it was never sent,
// once, naming that digest; a repeat naming the same digest is
// recognised; it moves only from the digest it names; a digested row is
// never claimed nor skipped.
func settleDigestedUnsentOnlyMoveFromTheNamedDigest(t *testing.T, open DigestOpener) {
	d := open(t, nil)
	ctx := context.Background()
	for _, id := range []string{"d_v1", "d_v2"} {
		if _, _, err := d.Ensure(ctx, NewRow(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Claim(ctx, "d_v2", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	g1 := delivery.Row{ID: "g_1_x", Period: "2026-06-10"}
	g2 := delivery.Row{ID: "g_2_y", Period: "2026-06-11"}
	if _, err := d.SettleDigested(ctx, "d_v2", g1); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("digest a row in flight: %v, want ErrConflict", err)
	}
	r, err := d.SettleDigested(ctx, "d_v1", g1)
	if err != nil || r.Status != delivery.StatusDigested || r.Digest != "g_1_x" || r.Period != "2026-06-10" ||
		r.SkipReason != delivery.DigestReason("2026-06-10") || !r.Status.Done() || r.IsDigest() {
		t.Fatalf("settle: %v %+v", err, r)
	}
	if _, err := d.SettleDigested(ctx, "d_v1", g1); err != nil {
		t.Fatalf("the same settle again: %v", err)
	}
	if _, err := d.SettleDigested(ctx, "d_v1", g2); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("settle into another digest: %v, want ErrConflict", err)
	}
	if _, err := d.MoveDigested(ctx, "d_v1", "g_9_z", g2); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("move from a digest it does not name: %v, want ErrConflict", err)
	}
	r, err = d.MoveDigested(ctx, "d_v1", "g_1_x", g2)
	if err != nil || r.Digest != "g_2_y" || r.Period != "2026-06-11" || r.SkipReason != delivery.DigestReason("2026-06-11") {
		t.Fatalf("move: %v %+v", err, r)
	}
	if _, err := d.MoveDigested(ctx, "d_v1", "g_1_x", g2); err != nil {
		t.Fatalf("the same move again: %v", err)
	}
	if _, err := d.Claim(ctx, "d_v1", "t", time.Minute); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("claim of a digested row: %v", err)
	}
	if _, err := d.Skip(ctx, "d_v1", delivery.StatusSuperseded, "v2"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("skip of a digested row: %v", err)
	}
}
