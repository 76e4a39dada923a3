package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// BudgetsOpener opens empty budgets for one test.
type BudgetsOpener func(t *testing.T) store.Budgets

// Budgets runs the model-run budgets' suite against the store open returns.
func Budgets(t *testing.T, open BudgetsOpener) {
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 10, 20, 0, 0, time.UTC)
	windows := func(limitCL, limitAuthor int) []store.BudgetWindow {
		return []store.BudgetWindow{
			{Name: "changelist", Key: "github:o/r#1", Every: time.Hour, Limit: limitCL},
			{Name: "author", Key: "github:mallory", Every: 24 * time.Hour, Limit: limitAuthor},
		}
	}

	// Twenty jobs spend at once from a window of five: exactly five run,
	// and each is refused naming the budget spent.
	// Rules: R-BUDGET-1.
	t.Run("ConcurrentSpendsNeverPassTheLimit", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		res := make([]store.SpendResult, 20)
		errs := make([]error, 20)
		for i := range res {
			wg.Go(func() {
				res[i], errs[i] = s.Spend(ctx, store.Spend{JobID: job.ID(fmt.Sprintf("j_%02d", i)), At: at, Windows: windows(5, 100)})
			})
		}
		wg.Wait()
		ok := 0
		for i, r := range res {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if r.OK {
				ok++
			} else if r.Refused != "changelist" || r.Limit != 5 {
				t.Errorf("refusal %+v, want the changelist budget of 5", r)
			}
		}
		if ok != 5 {
			t.Fatalf("%d spends passed a limit of 5", ok)
		}
	})

	// A retry of the same job spends nothing more: the window still has
	// room for another job, and the job itself passes again.
	// Rules: R-BUDGET-1.
	t.Run("SameJobSpendsOnce", func(t *testing.T) {
		s := open(t)
		for range 3 {
			r, err := s.Spend(ctx, store.Spend{JobID: "j_a", At: at, Windows: windows(2, 100)})
			if err != nil || !r.OK {
				t.Fatalf("retry of j_a: %+v, %v", r, err)
			}
		}
		if r, err := s.Spend(ctx, store.Spend{JobID: "j_b", At: at, Windows: windows(2, 100)}); err != nil || !r.OK {
			t.Fatalf("j_b after j_a's retries: %+v, %v; the retries spent the budget", r, err)
		}
		if r, _ := s.Spend(ctx, store.Spend{JobID: "j_c", At: at, Windows: windows(2, 100)}); r.OK {
			t.Fatal("j_c passed a spent budget")
		}
		if r, _ := s.Spend(ctx, store.Spend{JobID: "j_a", At: at, Windows: windows(2, 100)}); !r.OK {
			t.Fatal("j_a, already counted, was refused on a later retry")
		}
	})

	// A refusal by one window spends nothing from the others; the next
	// window starts afresh.
	// Rules: R-BUDGET-1.
	t.Run("RefusedSpendsNothingNextWindowFresh", func(t *testing.T) {
		s := open(t)
		if r, err := s.Spend(ctx, store.Spend{JobID: "j_1", At: at, Windows: windows(5, 1)}); err != nil || !r.OK {
			t.Fatalf("first: %+v, %v", r, err)
		}
		r, err := s.Spend(ctx, store.Spend{JobID: "j_2", At: at, Windows: windows(5, 1)})
		if err != nil || r.OK || r.Refused != "author" || r.Used != 1 {
			t.Fatalf("second: %+v, %v; want refused by the author budget, 1 used", r, err)
		}
		// Had j_2 spent from the changelist window, j_3..j_6 would find
		// only three places.
		for i := 3; i <= 6; i++ {
			other := []store.BudgetWindow{windows(5, 1)[0]}
			if r, err := s.Spend(ctx, store.Spend{JobID: job.ID(fmt.Sprintf("j_%d", i)), At: at, Windows: other}); err != nil || !r.OK {
				t.Fatalf("j_%d: %+v, %v; the refused spend was counted", i, r, err)
			}
		}
		if r, err := s.Spend(ctx, store.Spend{JobID: "j_7", At: at.Add(time.Hour), Windows: windows(5, 100)}); err != nil || !r.OK {
			t.Fatalf("the next hour: %+v, %v", r, err)
		}
		if r, err := s.Spend(ctx, store.Spend{JobID: "j_8", At: at, Windows: windows(0, 0)}); err != nil || !r.OK {
			t.Fatalf("limits of 0 are off: %+v, %v", r, err)
		}
	})
}

// ReplaysOpener opens empty replay records for one test, on clock now.
type ReplaysOpener func(t *testing.T, now store.Clock) store.Replays

// Replays runs the replay records' suite against the store open returns.
func Replays(t *testing.T, open ReplaysOpener) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 11, 27, 10, 20, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	// 200 concurrent replays of one delivery id: one claim. A handled one
	// stays a replay for its window, then is new again; a released one
	// (its handling failed) and a claim older than its lease (its intake
	// died) are claimed again.
	// Rules: R-BUDGET-3.
	t.Run("OneClaimPerDeliveryWithinTheWindow", func(t *testing.T) {
		s := open(t, clock)
		var wg sync.WaitGroup
		var n sync.Map
		for i := range 200 {
			wg.Go(func() {
				ok, err := s.ClaimDelivery(ctx, store.ReplayByDelivery("github", "d-1"), time.Hour, time.Minute)
				if err != nil {
					t.Error(err)
				}
				if ok {
					n.Store(i, true)
				}
			})
		}
		wg.Wait()
		claims := 0
		n.Range(func(any, any) bool { claims++; return true })
		if claims != 1 {
			t.Fatalf("%d claims of one delivery, want 1", claims)
		}
		if err := s.CompleteDelivery(ctx, store.ReplayByDelivery("github", "d-1")); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.ClaimDelivery(ctx, store.ReplayByDelivery("gitlab", "d-1"), time.Hour, time.Minute); !ok {
			t.Fatal("another source's delivery with the same id was taken for a replay")
		}
		advance(30 * time.Minute)
		if ok, _ := s.ClaimDelivery(ctx, store.ReplayByDelivery("github", "d-1"), time.Hour, time.Minute); ok {
			t.Fatal("a handled delivery was claimed again within its window")
		}
		advance(31 * time.Minute)
		if ok, _ := s.ClaimDelivery(ctx, store.ReplayByDelivery("github", "d-1"), time.Hour, time.Minute); !ok {
			t.Fatal("a delivery past its window is still a replay")
		}

		if ok, _ := s.ClaimDelivery(ctx, store.ReplayByDelivery("github", "d-2"), time.Hour, time.Minute); !ok {
			t.Fatal("d-2 not claimed")
		}
		if err := s.ReleaseDelivery(ctx, store.ReplayByDelivery("github", "d-2")); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.ClaimDelivery(ctx, store.ReplayByDelivery("github", "d-2"), time.Hour, time.Minute); !ok {
			t.Fatal("a released delivery is still claimed")
		}
		if ok, _ := s.ClaimDelivery(ctx, store.ReplayByDelivery("github", "d-2"), time.Hour, time.Minute); ok {
			t.Fatal("a fresh claim was taken over")
		}
		advance(2 * time.Minute)
		if ok, _ := s.ClaimDelivery(ctx, store.ReplayByDelivery("github", "d-2"), time.Hour, time.Minute); !ok {
			t.Fatal("a claim older than its lease, never handled, was not taken over")
		}
	})

	// A body is remembered as a delivery id is: 200 concurrent claims of
	// one body, under whatever delivery ids, give one claim; handled, it
	// stays a replay for its window; released, or its claim past its
	// lease, it is claimed again. It is scoped per source, and a delivery
	// id that spells the body's digest names another record.
	// Rules: R-BUDGET-3.
	t.Run("OneClaimPerBodyWithinTheWindow", func(t *testing.T) {
		s := open(t, clock)
		body := store.ReplayByBody("github", []byte(`{"action":"review_requested"}`))
		var wg sync.WaitGroup
		var n sync.Map
		for i := range 200 {
			wg.Go(func() {
				ok, err := s.ClaimDelivery(ctx, body, time.Hour, time.Minute)
				if err != nil {
					t.Error(err)
				}
				if ok {
					n.Store(i, true)
				}
			})
		}
		wg.Wait()
		claims := 0
		n.Range(func(any, any) bool { claims++; return true })
		if claims != 1 {
			t.Fatalf("%d claims of one body, want 1", claims)
		}
		if err := s.CompleteDelivery(ctx, body); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.ClaimDelivery(ctx, store.ReplayByDelivery("github", body.ID), time.Hour, time.Minute); !ok {
			t.Fatal("a delivery id spelling the body's digest was taken for the body")
		}
		if ok, _ := s.ClaimDelivery(ctx, store.ReplayByBody("gitlab", []byte(`{"action":"review_requested"}`)), time.Hour, time.Minute); !ok {
			t.Fatal("another source's body was taken for a replay")
		}
		advance(59 * time.Minute)
		if ok, _ := s.ClaimDelivery(ctx, body, time.Hour, time.Minute); ok {
			t.Fatal("a handled body was claimed again within its window")
		}
		advance(2 * time.Minute)
		if ok, _ := s.ClaimDelivery(ctx, body, time.Hour, time.Minute); !ok {
			t.Fatal("a body past its window is still a replay")
		}
		if err := s.ReleaseDelivery(ctx, body); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.ClaimDelivery(ctx, body, time.Hour, time.Minute); !ok {
			t.Fatal("a released body is still claimed")
		}
		if ok, _ := s.ClaimDelivery(ctx, body, time.Hour, time.Minute); ok {
			t.Fatal("a fresh claim of a body was taken over")
		}
		advance(2 * time.Minute)
		if ok, _ := s.ClaimDelivery(ctx, body, time.Hour, time.Minute); !ok {
			t.Fatal("a body's claim older than its lease, never handled, was not taken over")
		}
	})

	// Events of one version inside the window schedule one refresh; the
	// first after it schedules the next.
	// Rules: R-BUDGET-3.
	t.Run("OneRefreshPerWindow", func(t *testing.T) {
		s := open(t, clock)
		var wg sync.WaitGroup
		var scheduled sync.Map
		for i := range 50 {
			wg.Go(func() {
				ok, err := s.ScheduleRefresh(ctx, "j_x", 10*time.Second)
				if err != nil {
					t.Error(err)
				}
				if ok {
					scheduled.Store(i, true)
				}
			})
		}
		wg.Wait()
		n := 0
		scheduled.Range(func(any, any) bool { n++; return true })
		if n != 1 {
			t.Fatalf("%d refreshes scheduled, want 1", n)
		}
		if ok, _ := s.ScheduleRefresh(ctx, "j_y", 10*time.Second); !ok {
			t.Fatal("another version's refresh was coalesced")
		}
		advance(5 * time.Second)
		if ok, _ := s.ScheduleRefresh(ctx, "j_x", 10*time.Second); ok {
			t.Fatal("scheduled again inside the window")
		}
		advance(6 * time.Second)
		if ok, _ := s.ScheduleRefresh(ctx, "j_x", 10*time.Second); !ok {
			t.Fatal("not scheduled after the window")
		}
		if err := s.CancelRefresh(ctx, "j_x"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.ScheduleRefresh(ctx, "j_x", 10*time.Second); !ok {
			t.Fatal("a cancelled schedule still coalesces")
		}
	})
}
