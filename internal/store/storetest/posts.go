package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/channel"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/store"
)

// PostsOpener opens an empty post store whose clock is now.
type PostsOpener func(t *testing.T, now store.Clock) store.Posts

// Posts runs the post rows' suite (R-CHANNEL-1) against the store open
// returns: the claim, the mark and the release under the claim's token,
// the lapsed lease claimed again, settling (a missing row included) and
// the sweep's view.
func Posts(t *testing.T, open PostsOpener) {
	ctx := context.Background()
	start := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	row := func(id string, ph channel.Phase) channel.Row {
		p := channel.Post{ID: id, VersionKey: "v_1", Source: "github", Changelist: "acme/x#7", Version: 3, Head: "abc",
			Phase: ph, Outcome: channel.Reviewed, Counts: channel.Counts{Warning: 1},
			Findings: []critic.Finding{{File: "a.go", Line: 4, Severity: critic.SeverityWarning, Message: "<b>x</b>"}}}
		return channel.Row{ID: id, JobID: "j_1", Channel: "webhook:chat", Phase: ph, Post: p, Body: []byte(`{"a":1}`)}
	}

	// A row is created once, with its body; a second ensure returns it
	// unchanged, whatever it carries.
	// Rules: R-CHANNEL-1, R-CHANNEL-2.
	t.Run("ensure once, body kept", func(t *testing.T) {
		now := start
		s := open(t, func() time.Time { return now })
		r, made, err := s.EnsurePost(ctx, row("msg_a", channel.Finished))
		if err != nil || !made || r.Status != channel.StatusPending {
			t.Fatalf("ensure = %+v %v %v", r, made, err)
		}
		other := row("msg_a", channel.Finished)
		other.Body = []byte(`{"a":2}`)
		r, made, err = s.EnsurePost(ctx, other)
		if err != nil || made || string(r.Body) != `{"a":1}` {
			t.Fatalf("second ensure = %q %v %v, want the first body", r.Body, made, err)
		}
		if len(r.Post.Findings) != 1 || r.Post.Findings[0].Message != "<b>x</b>" || r.Post.Counts.Warning != 1 {
			t.Fatalf("post read back = %+v", r.Post)
		}
	})

	// Claim, send, mark in one write under the claim's token; a live
	// lease keeps others out, a lapsed one lets the next claim in, and the
	// first claimant's token no longer marks.
	// Rules: R-CHANNEL-1, R-CHANNEL-3.
	t.Run("claim, lapse, reclaim, mark", func(t *testing.T) {
		now := start
		s := open(t, func() time.Time { return now })
		if _, _, err := s.EnsurePost(ctx, row("msg_b", channel.Started)); err != nil {
			t.Fatal(err)
		}
		r, err := s.ClaimPost(ctx, "msg_b", "t1", time.Minute)
		if err != nil || r.Status != channel.StatusSending || r.Attempts != 1 || r.ClaimToken != "t1" {
			t.Fatalf("claim = %+v %v", r, err)
		}
		if _, err := s.ClaimPost(ctx, "msg_b", "t2", time.Minute); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("claim under a live lease = %v, want conflict", err)
		}
		now = now.Add(2 * time.Minute)
		var swept []string
		if err := s.UnsettledPosts(ctx, func(r channel.Row) error { swept = append(swept, r.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(swept) != 1 || swept[0] != "msg_b" {
			t.Fatalf("unsettled after the lease lapsed = %v, want msg_b", swept)
		}
		r, err = s.ClaimPost(ctx, "msg_b", "t2", time.Minute)
		if err != nil || r.Attempts != 2 {
			t.Fatalf("reclaim after lapse = %+v %v", r, err)
		}
		if _, err := s.MarkPostSent(ctx, "msg_b", "t1", channel.Receipt{Ref: "x"}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("mark under the lapsed claim = %v, want conflict", err)
		}
		r, err = s.MarkPostSent(ctx, "msg_b", "t2", channel.Receipt{Ref: "run-9"})
		if err != nil || r.Status != channel.StatusSent || r.Receipt.Ref != "run-9" || r.ClaimToken != "" {
			t.Fatalf("mark = %+v %v", r, err)
		}
		// A retried mark whose first write applied is recognised.
		if r, err = s.MarkPostSent(ctx, "msg_b", "t2", channel.Receipt{Ref: "run-9"}); err != nil || r.Status != channel.StatusSent {
			t.Fatalf("mark again = %+v %v", r, err)
		}
		if _, err := s.ClaimPost(ctx, "msg_b", "t3", time.Minute); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("claim of a sent row = %v, want conflict", err)
		}
		swept = nil
		if err := s.UnsettledPosts(ctx, func(r channel.Row) error { swept = append(swept, r.ID); return nil }); err != nil || len(swept) != 0 {
			t.Fatalf("unsettled after sent = %v %v", swept, err)
		}
	})

	// A failed try returns the row to pending for the next claim.
	// Rules: R-CHANNEL-1.
	t.Run("release", func(t *testing.T) {
		now := start
		s := open(t, func() time.Time { return now })
		if _, _, err := s.EnsurePost(ctx, row("msg_c", channel.Finished)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ClaimPost(ctx, "msg_c", "t1", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReleasePost(ctx, "msg_c", "t9", "UPSTREAM_5XX"); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("release under another token = %v", err)
		}
		r, err := s.ReleasePost(ctx, "msg_c", "t1", "UPSTREAM_5XX")
		if err != nil || r.Status != channel.StatusPending || r.LastErrorClass != "UPSTREAM_5XX" || r.ClaimToken != "" {
			t.Fatalf("release = %+v %v", r, err)
		}
		if r, err = s.ClaimPost(ctx, "msg_c", "t2", time.Minute); err != nil || r.Attempts != 2 {
			t.Fatalf("claim after release = %+v %v", r, err)
		}
	})

	// Settling: a row that does not exist is created settled (a Started
	// post that comes after its Finished one is never sent); a pending
	// one is settled; one claimed by another is not; the claimant settles
	// its own.
	// Rules: R-CHANNEL-1, R-CHANNEL-6.
	t.Run("settle", func(t *testing.T) {
		now := start
		s := open(t, func() time.Time { return now })
		r, err := s.SettlePost(ctx, row("msg_d", channel.Started), "", "finished first")
		if err != nil || r.Status != channel.StatusSettled || r.SettleReason != "finished first" {
			t.Fatalf("settle missing = %+v %v", r, err)
		}
		r, made, err := s.EnsurePost(ctx, row("msg_d", channel.Started))
		if err != nil || made || r.Status != channel.StatusSettled {
			t.Fatalf("ensure after settle = %+v %v %v, want the settled row", r, made, err)
		}
		if _, err := s.ClaimPost(ctx, "msg_d", "t1", time.Minute); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("claim settled = %v", err)
		}
		if _, _, err := s.EnsurePost(ctx, row("msg_e", channel.Started)); err != nil {
			t.Fatal(err)
		}
		if r, err = s.SettlePost(ctx, row("msg_e", channel.Started), "", "finished first"); err != nil || r.Status != channel.StatusSettled {
			t.Fatalf("settle pending = %+v %v", r, err)
		}
		if _, _, err := s.EnsurePost(ctx, row("msg_f", channel.Started)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ClaimPost(ctx, "msg_f", "t1", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SettlePost(ctx, row("msg_f", channel.Started), "", "finished first"); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("settle of a row in flight = %v, want conflict", err)
		}
		if r, err = s.SettlePost(ctx, row("msg_f", channel.Started), "t1", "not applicable"); err != nil || r.Status != channel.StatusSettled {
			t.Fatalf("claimant settles = %+v %v", r, err)
		}
		if r.Channel != "webhook:chat" || r.JobID != "j_1" {
			t.Fatalf("settled row = %+v", r)
		}
	})
}
