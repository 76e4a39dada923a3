package delivery_test

import (
	"errors"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
)

// A stored row is taken as the kind it is and refused as any other: a
// digest is never gated as a version, nor a version closed as a digest,
// nor a critique confirmed as a reply.
// Rules: R-OUTBOX-11.
func TestKinds_EachStoredRowIsOneKind(t *testing.T) {
	now := time.Date(2026, 6, 10, 9, 0, 0, 0, time.UTC)
	version := delivery.NewVersionRow("j1", "generic:cl", "Ann@Example.com", 2, delivery.Message{Subject: "s"}, now)
	if version.ID != delivery.ID("generic:cl", "ann@example.com", 2) || version.Recipient != "ann@example.com" ||
		version.Status != delivery.StatusPending || version.Message.Subject != "s" {
		t.Fatalf("version row %+v", version.Row)
	}
	noEmail := delivery.NoEmailRow("j1", "generic:cl", "github:ann", 2, now)
	if noEmail.Status != delivery.StatusSkippedNoEmail || noEmail.ID != delivery.ID("generic:cl", "github:ann", 2) {
		t.Fatalf("no-email row %+v", noEmail.Row)
	}
	dg := delivery.NewDigestRow("Ann@Example.com", now, "2026-06-10")
	if due, ok := dg.Due(); !ok || !due.Equal(now) || dg.Recipient != "ann@example.com" || dg.Period != "2026-06-10" {
		t.Fatalf("digest row %+v", dg.Row)
	}
	reply := delivery.Row{ID: delivery.ReplyID("ses-1"), Kind: delivery.KindReply}

	for _, c := range []struct {
		name                    string
		row                     delivery.Row
		version, digest, answer bool
	}{
		{"version", version.Row, true, false, false},
		{"digest", dg.Row, false, true, false},
		{"reply", reply, false, false, true},
	} {
		_, verr := delivery.AsVersion(c.row)
		_, derr := delivery.AsDigest(c.row)
		_, rerr := delivery.AsReply(c.row)
		var ke *delivery.KindError
		for _, k := range []struct {
			ok  bool
			err error
		}{{c.version, verr}, {c.digest, derr}, {c.answer, rerr}} {
			if k.ok != (k.err == nil) || (k.err != nil && !errors.As(k.err, &ke)) {
				t.Errorf("%s: version %v, digest %v, reply %v", c.name, verr, derr, rerr)
			}
		}
	}
	if _, err := delivery.Versions([]delivery.Row{version.Row, dg.Row}); err == nil {
		t.Error("a digest among a version's rows was taken")
	}
	vs, err := delivery.Versions([]delivery.Row{version.Row, noEmail.Row})
	if err != nil || len(delivery.Stored(vs)) != 2 || delivery.Stored(vs)[1].ID != noEmail.ID {
		t.Errorf("versions %v, %v", vs, err)
	}
	digested := version
	digested.Status, digested.Digest = delivery.StatusDigested, dg.ID
	if id, ok := digested.Digested(); !ok || id != dg.ID {
		t.Errorf("digested into %q, %v", id, ok)
	}
	if _, ok := version.Digested(); ok {
		t.Error("a pending row reads as digested")
	}
}
