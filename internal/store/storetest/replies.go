package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/store"
)

// ReplyStores are the stores a reply writes besides votes and marks.
type ReplyStores interface {
	store.Mutes
	store.ReplyWindows
	store.ReplyClaims
}

// Replies runs the suite of the reply function's stores against the
// stores open returns: a mute is per changelist and reader, read for
// every recipient at once, and idempotent (R-REPLY-7); a window admits
// at most max replies, a reply counted once however often it comes back,
// even from writers racing (R-REPLY-6); one receipt of a reply acts on
// it, whichever receipts race for it, and that receipt's retries go on
// (R-REPLY-8).
func Replies(t *testing.T, open func(t *testing.T) ReplyStores) {
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

	// Rules: R-REPLY-7.
	t.Run("MutePerChangelistAndReader", func(t *testing.T) {
		s := open(t)
		for range 2 {
			if err := s.Mute(ctx, "generic:cl-1", "r_ann", at); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Muted(ctx, "generic:cl-1", []string{"r_ann", "r_bo", "r_ann"})
		if err != nil || len(got) != 1 || !got["r_ann"] {
			t.Fatalf("muted %v (%v), want ann only", got, err)
		}
		if got, err := s.Muted(ctx, "generic:cl-2", []string{"r_ann"}); err != nil || len(got) != 0 {
			t.Fatalf("another changelist: %v (%v), want none", got, err)
		}
		if got, err := s.Muted(ctx, "generic:cl-1", nil); err != nil || len(got) != 0 {
			t.Fatalf("no recipients: %v (%v)", got, err)
		}
	})

	// Rules: R-REPLY-6.
	t.Run("WindowAdmitsAtMostMaxEachReplyOnce", func(t *testing.T) {
		s := open(t)
		admit := func(id string, start time.Time) bool {
			t.Helper()
			ok, err := s.Admit(ctx, "d_one", id, start, time.Hour, 3)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		for i := range 3 {
			if !admit(fmt.Sprint("m", i), at) {
				t.Fatalf("reply %d of 3 refused", i)
			}
		}
		if admit("m3", at) {
			t.Fatal("a fourth reply in the window admitted")
		}
		if !admit("m1", at) {
			t.Fatal("a reply already counted, redelivered, is refused")
		}
		if !admit("m3", at.Add(time.Hour)) {
			t.Fatal("the next window is full too")
		}
		if ok, err := s.Admit(ctx, "d_two", "m9", at, time.Hour, 3); err != nil || !ok {
			t.Fatalf("another delivery's window: %v, %v", ok, err)
		}
	})

	// Rules: R-REPLY-6.
	t.Run("WindowHoldsUnderConcurrentReplies", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		admitted := 0
		for i := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := s.Admit(ctx, "d_race", fmt.Sprint("m", i%8), at, time.Hour, 5)
				if err != nil {
					t.Error(err)
				}
				if ok && i < 8 {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if admitted != 5 {
			t.Errorf("%d distinct replies admitted, want 5", admitted)
		}
	})

	// Rules: R-REPLY-8.
	t.Run("ClaimOneReceiptActsItsRetriesGoOn", func(t *testing.T) {
		s := open(t)
		claim := func(confirmation, ses string) bool {
			t.Helper()
			ok, err := s.Claim(ctx, confirmation, ses)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !claim("d_reply1", "ses-a") {
			t.Fatal("the first receipt of a reply may not act on it")
		}
		if claim("d_reply1", "ses-b") {
			t.Fatal("a second receipt of the reply claimed it too")
		}
		if !claim("d_reply1", "ses-a") {
			t.Fatal("the receipt that claimed the reply, retried, may not go on")
		}
		if !claim("d_reply2", "ses-b") {
			t.Fatal("another reply's claim is held by the first")
		}
	})

	// Rules: R-REPLY-8.
	t.Run("ClaimOneOfConcurrentReceipts", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []string
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ses := fmt.Sprint("ses-", i)
				ok, err := s.Claim(ctx, "d_race", ses)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					won = append(won, ses)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("receipts %v acted on one reply, want exactly one", won)
		}
		if ok, err := s.Claim(ctx, "d_race", won[0]); err != nil || !ok {
			t.Errorf("the winner, retried: %v, %v", ok, err)
		}
	})
}
