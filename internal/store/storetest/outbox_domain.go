package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store"
)

// R-RECIPIENT-1: a row settled skipped_domain (an address outside the
// allowed domains) is stored and read back as such, with its reason, and
// is never claimed for a send; a row in flight is not relabelled.
func skippedDomainTerminalNeverClaimed(t *testing.T, open Opener) {
	now := time.Now().UTC()
	d := open(t, func() time.Time { return now })
	ctx := context.Background()
	for _, id := range []string{"d_dom", "d_fly"} {
		if _, _, err := d.Ensure(ctx, NewRow(id)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := d.Skip(ctx, "d_dom", delivery.StatusSkippedDomain, "domain")
	if err != nil || r.Status != delivery.StatusSkippedDomain || r.SkipReason != "domain" {
		t.Fatalf("skip: %+v %v", r, err)
	}
	if got, err := d.Get(ctx, "d_dom"); err != nil || got.Status != delivery.StatusSkippedDomain || got.SkipReason != "domain" ||
		!got.Status.Done() || delivery.Decide(got, now) != delivery.Skip {
		t.Fatalf("read back: %+v %v, want skipped_domain, done, never sent", got.Status, err)
	}
	if _, err := d.Claim(ctx, "d_dom", "t", time.Minute); !errors.Is(err, store.ErrConflict) {
		t.Errorf("claim of a skipped_domain row: %v, want ErrConflict", err)
	}
	if _, err := d.Claim(ctx, "d_fly", "t", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Skip(ctx, "d_fly", delivery.StatusSkippedDomain, "domain"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("skip of a row in flight: %v, want ErrConflict", err)
	}
}
