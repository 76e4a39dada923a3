package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store"
)

// sentRow creates row id and marks it sent with message msg.
func sentRow(t *testing.T, d store.Deliveries, id, msg string) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := d.Ensure(ctx, NewRow(id)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(ctx, id, "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MarkSent(ctx, id, "tok", msg); err != nil {
		t.Fatal(err)
	}
}

// A quiet settlement stands only on a row that carries it
// (delivery.Row.Carries), in one write with that row's dependents: a row
// sent, or settled because its reader had the content; for superseded,
// also a row superseded or digested in turn. A row SES undid after its
// Send — a Reject, a permanent bounce, a transient one recorded once the
// resends ran out — carries nothing (ErrNotReached, nothing written); a
// complaint is from a reader who had it. A row claimed or settled
// already is refused as Skip refuses it (ErrConflict). The undone row's
// Reject or event returns its dependents, what feedback revives.
// Rules: R-QUIET-4, R-QUIET-3, R-STORE-1.
func settleQuietStandsOnlyOnARowThatReached(t *testing.T, open Opener) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	d := open(t, func() time.Time { return now })
	ctx := context.Background()
	for id, msg := range map[string]string{"q_sent": "ses-s", "q_rej": "ses-r", "q_perm": "ses-p", "q_soft": "ses-t", "q_compl": "ses-c"} {
		sentRow(t, d, id, msg)
	}
	for _, id := range []string{"q_a", "q_b", "q_c", "q_d", "q_e", "q_f", "q_g", "q_h", "q_i", "q_j", "q_k"} {
		if _, _, err := d.Ensure(ctx, NewRow(id)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := d.SettleQuiet(ctx, "q_a", delivery.StatusSuperseded, "v2", "q_rej")
	if err != nil || r.Status != delivery.StatusSuperseded || r.SkipReason != "v2" || r.StandsOn != "q_rej" {
		t.Fatalf("superseded by a sent row: %s %q on %q (%v)", r.Status, r.SkipReason, r.StandsOn, err)
	}
	if _, err := d.SettleQuiet(ctx, "q_a", delivery.StatusSuperseded, "v3", "q_sent"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a row settled already: %v, want ErrConflict", err)
	}
	if _, err := d.Claim(ctx, "q_b", "tok", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SettleQuiet(ctx, "q_b", delivery.StatusSuperseded, "v2", "q_sent"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a row in flight: %v, want ErrConflict", err)
	}
	if got, _ := d.Get(ctx, "q_sent"); len(got.Dependents) != 0 {
		t.Errorf("a refused settlement left %v among the dependents of the row it would stand on", got.Dependents)
	}
	// SES undoes the sends after their Send events.
	rej, err := d.Reject(ctx, "q_rej", "ses-r", now)
	if err != nil || !slices.Equal(rej.Dependents, []string{"q_a"}) {
		t.Fatalf("the Reject returns %v (%v), want the dependents [q_a]", rej.Dependents, err)
	}
	perm, _, err := d.RecordEvent(ctx, "q_perm", store.Event{Type: "Bounce", MessageID: "ses-p", At: now, BounceType: "Permanent"})
	if err != nil || perm.Status != delivery.StatusSuppressed {
		t.Fatalf("permanent bounce: %s %v", perm.Status, err)
	}
	if _, _, err := d.RecordEvent(ctx, "q_soft", store.Event{Type: "Bounce", MessageID: "ses-t", At: now, BounceType: "Transient"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.RecordEvent(ctx, "q_compl", store.Event{Type: "Complaint", MessageID: "ses-c", At: now}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id, on string
		status delivery.Status
		want   error
	}{
		{"q_c", "q_rej", delivery.StatusSuperseded, store.ErrNotReached},
		{"q_c", "q_rej", delivery.StatusSkippedSameDiff, store.ErrNotReached},
		{"q_c", "q_perm", delivery.StatusSuperseded, store.ErrNotReached},
		{"q_c", "q_soft", delivery.StatusSkippedNothingNew, store.ErrNotReached},
		{"q_c", "q_none", delivery.StatusSuperseded, store.ErrNotReached},
		{"q_c", "q_d", delivery.StatusSuperseded, store.ErrNotReached}, // pending: not sent yet
		{"q_c", "q_a", delivery.StatusSkippedSameDiff, store.ErrNotReached},
		{"q_c", "q_compl", delivery.StatusSkippedSameDiff, nil},
		{"q_d", "q_sent", delivery.StatusSkippedNothingNew, nil},
		{"q_e", "q_d", delivery.StatusSkippedSameDiff, nil}, // nothing new: they had it
		{"q_f", "q_a", delivery.StatusSuperseded, nil},      // superseded in turn
	} {
		r, err := d.SettleQuiet(ctx, c.id, c.status, "v9", c.on)
		if !errors.Is(err, c.want) && (c.want != nil || err != nil) {
			t.Errorf("%s as %s on %s: %v, want %v", c.id, c.status, c.on, err, c.want)
			continue
		}
		if c.want != nil {
			if got, _ := d.Get(ctx, c.id); got.Status != delivery.StatusPending || got.StandsOn != "" {
				t.Errorf("%s refused on %s, yet %s on %q", c.id, c.on, got.Status, got.StandsOn)
			}
			continue
		}
		if r.Status != c.status || r.StandsOn != c.on {
			t.Errorf("%s on %s: %s on %q", c.id, c.on, r.Status, r.StandsOn)
		}
		if on, _ := d.Get(ctx, c.on); !slices.Contains(on.Dependents, c.id) {
			t.Errorf("%s stands on %s, whose dependents are %v", c.id, c.on, on.Dependents)
		}
	}
	// A row created settled quietly stands on its row in the same write.
	g := NewRow("q_new")
	g.Status, g.SkipReason, g.StandsOn = delivery.StatusSkippedNothingNew, "nothing new since v1", "q_sent"
	if got, created, err := d.Ensure(ctx, g); err != nil || !created || got.StandsOn != "q_sent" {
		t.Fatalf("ensure standing: created %v on %q (%v)", created, got.StandsOn, err)
	}
	again := g
	again.Status, again.StandsOn = delivery.StatusPending, ""
	if got, created, err := d.Ensure(ctx, again); err != nil || created || got.Status != delivery.StatusSkippedNothingNew || got.StandsOn != "q_sent" {
		t.Errorf("ensure again: %s on %q, created %v (%v), want the stored row", got.Status, got.StandsOn, created, err)
	}
	// The same row ensured standing again (a retried run that decided
	// the same, or another reason since): the stored row, not rewritten.
	retried := g
	retried.SkipReason = "nothing new since v2"
	if got, created, err := d.Ensure(ctx, retried); err != nil || created || got.SkipReason != g.SkipReason || got.StandsOn != "q_sent" {
		t.Errorf("ensure standing again: %q on %q, created %v (%v), want the stored row", got.SkipReason, got.StandsOn, created, err)
	}
	if got, _ := d.Get(ctx, "q_new"); got.SkipReason != g.SkipReason {
		t.Errorf("the stored row was rewritten: %q", got.SkipReason)
	}
	if on, _ := d.Get(ctx, "q_sent"); !slices.Equal(slices.Sorted(slices.Values(on.Dependents)), []string{"q_d", "q_new"}) {
		t.Errorf("q_sent's dependents %v, want [q_d q_new]", on.Dependents)
	}
	h := NewRow("q_new2")
	h.Status, h.SkipReason, h.StandsOn = delivery.StatusSkippedNothingNew, "nothing new since v1", "q_rej"
	if _, _, err := d.Ensure(ctx, h); !errors.Is(err, store.ErrNotReached) {
		t.Errorf("ensure standing on a rejected row: %v, want ErrNotReached", err)
	}
	if _, err := d.Get(ctx, "q_new2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused ensure created the row: %v", err)
	}
}

// A row settled quietly on a row that was undone goes back to pending
// (Revive), once: only while it still stands on that row. It was never
// sent, so it is then claimable; it keeps its own dependents, which
// stood on it and are revived in turn.
// Rules: R-QUIET-4, R-STORE-1.
func reviveOnlyARowStandingOnTheUndoneOne(t *testing.T, open Opener) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	d := open(t, func() time.Time { return now })
	ctx := context.Background()
	sentRow(t, d, "v_2", "ses-2")
	for _, id := range []string{"v_1", "v_0", "v_p"} {
		if _, _, err := d.Ensure(ctx, NewRow(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.SettleQuiet(ctx, "v_1", delivery.StatusSuperseded, "v2", "v_2"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SettleQuiet(ctx, "v_0", delivery.StatusSuperseded, "v1", "v_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Reject(ctx, "v_2", "ses-2", now); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Revive(ctx, "v_1", "v_0"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("revive on a row it does not stand on: %v, want ErrConflict", err)
	}
	r, err := d.Revive(ctx, "v_1", "v_2")
	if err != nil || r.Status != delivery.StatusPending || r.StandsOn != "" || r.SkipReason != "" || r.RevivedFrom != "v_2" ||
		!slices.Equal(r.Dependents, []string{"v_0"}) {
		t.Fatalf("revive: %s %q on %q from %q, dependents %v (%v)", r.Status, r.SkipReason, r.StandsOn, r.RevivedFrom, r.Dependents, err)
	}
	if _, err := d.Revive(ctx, "v_1", "v_2"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a second revive: %v, want ErrConflict", err)
	}
	for _, id := range []string{"v_p", "v_2", "v_none"} {
		if _, err := d.Revive(ctx, id, "v_2"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("revive of %s, not settled quietly: %v, want ErrConflict", id, err)
		}
	}
	if r, err := d.Claim(ctx, "v_1", "tok", time.Minute); err != nil || r.Status != delivery.StatusSending {
		t.Errorf("claim of the revived row: %s %v", r.Status, err)
	}
	// v_0 stood on v_1, which is not settled any more: it is revived in
	// turn, and a row being sent carries nothing yet.
	if r, err := d.Revive(ctx, "v_0", "v_1"); err != nil || r.Status != delivery.StatusPending {
		t.Errorf("revive in turn: %s %v", r.Status, err)
	}
	if _, err := d.SettleQuiet(ctx, "v_0", delivery.StatusSuperseded, "v1", "v_1"); !errors.Is(err, store.ErrNotReached) {
		t.Errorf("superseded by a row in flight: %v, want ErrNotReached", err)
	}
}
