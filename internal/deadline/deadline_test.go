package deadline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/deadline"
)

// clock is a fake clock a test moves by hand: deadlines are real
// (context's timers are), but the budget's decisions read this clock, so
// an invocation's minutes pass without waiting.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func invocation(t *testing.T, c *clock, d time.Duration) context.Context {
	ctx, cancel := context.WithDeadline(t.Context(), c.t.Add(d))
	t.Cleanup(cancel)
	return ctx
}

// A message starts only while its need is left before the reserve; the
// work ends at the reserve, the bookkeeping just before the deadline and
// outlives the work.
// Rules: R-STAGE-9.
func TestPlan_StartsWhileTheNeedFits(t *testing.T) {
	c := &clock{t: time.Now()}
	ctx := invocation(t, c, 60*time.Second)
	p := deadline.Budget{Need: 20 * time.Second, Reserve: 5 * time.Second, Now: c.now}.Plan(ctx)
	if !p.Allows() {
		t.Fatal("a fresh invocation does not allow a message")
	}
	c.advance(35 * time.Second) // 25 s left, 20 s before the reserve
	if !p.Allows() {
		t.Fatal("20 s before the reserve does not allow a 20 s message")
	}
	c.advance(time.Second)
	if p.Allows() {
		t.Fatal("19 s before the reserve allows a 20 s message")
	}
	d, _ := ctx.Deadline()
	work, cancel := p.Work(ctx)
	defer cancel()
	if wd, _ := work.Deadline(); !wd.Equal(d.Add(-5 * time.Second)) {
		t.Errorf("work ends %v before the deadline, want 5s", d.Sub(wd))
	}
	after, cancel2 := p.After(work)
	defer cancel2()
	ad, _ := after.Deadline()
	if gap := d.Sub(ad); gap <= 0 || gap > time.Second {
		t.Errorf("bookkeeping ends %v before the deadline, want (0, 1s]", gap)
	}
	cancel()
	if after.Err() != nil {
		t.Error("the bookkeeping's context ended with the work's")
	}
}

// A worst case longer than the invocation is clipped to half of it, and
// the reserve to a quarter: a 3 s local invocation still runs messages.
// Rules: R-STAGE-9.
func TestPlan_ClippedToAShortInvocation(t *testing.T) {
	c := &clock{t: time.Now()}
	p := deadline.Budget{Need: 20 * time.Second, Reserve: 5 * time.Second, Now: c.now}.Plan(invocation(t, c, 3*time.Second))
	if p.Reserve() != 750*time.Millisecond || p.Need() != 1125*time.Millisecond {
		t.Errorf("reserve %v need %v, want 750ms and 1.125s", p.Reserve(), p.Need())
	}
	if !p.Allows() {
		t.Error("a fresh short invocation does not allow a message")
	}
	c.advance(1200 * time.Millisecond)
	if p.Allows() {
		t.Error("1.05 s before the reserve allows a 1.125 s message")
	}
}

// Without a deadline (a test, the CLI) every message starts and nothing is
// bounded.
func TestPlan_NoDeadline(t *testing.T) {
	p := deadline.Budget{Need: time.Hour, Reserve: time.Hour}.Plan(t.Context())
	if p.Bounded() || !p.Allows() {
		t.Fatalf("bounded %v allows %v", p.Bounded(), p.Allows())
	}
	w, cancel := p.Work(t.Context())
	defer cancel()
	if _, ok := w.Deadline(); ok {
		t.Error("work has a deadline")
	}
}

// A call ends after its own limit or keep before the deadline, whichever
// is sooner; in a short invocation keep shrinks to a quarter of what is
// left. A cut call fails with context.DeadlineExceeded.
// Rules: R-STAGE-9.
func TestCall_DerivedFromWhatIsLeft(t *testing.T) {
	base := time.Now()
	long, cancel := context.WithDeadline(t.Context(), base.Add(10*time.Minute))
	defer cancel()
	for _, tc := range []struct {
		name        string
		parent      context.Context
		limit, keep time.Duration
		// want is the call's deadline, from base.
		want time.Duration
		tol  time.Duration
	}{
		{"its own limit first", long, time.Minute, 10 * time.Second, time.Minute, time.Second},
		{"keep before the deadline", long, time.Hour, 10 * time.Second, 10*time.Minute - 10*time.Second, 0},
		{"no limit", long, 0, 10 * time.Second, 10*time.Minute - 10*time.Second, 0},
	} {
		ctx, cancel := deadline.Call(tc.parent, tc.limit, tc.keep)
		d, ok := ctx.Deadline()
		cancel()
		if !ok {
			t.Errorf("%s: no deadline", tc.name)
			continue
		}
		if got := d.Sub(base); got < tc.want-tc.tol || got > tc.want+tc.tol {
			t.Errorf("%s: deadline at +%v, want +%v", tc.name, got, tc.want)
		}
	}
	short, cancel2 := context.WithTimeout(t.Context(), 40*time.Millisecond)
	defer cancel2()
	ctx, cancel3 := deadline.Call(short, time.Hour, 10*time.Second)
	defer cancel3()
	pd, _ := short.Deadline()
	cd, _ := ctx.Deadline()
	if gap := pd.Sub(cd); gap <= 0 || gap > 10*time.Millisecond {
		t.Errorf("in a 40 ms invocation the call keeps %v, want at most a quarter", gap)
	}
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("cut call: %v", ctx.Err())
	}
	free, cancel4 := deadline.Call(t.Context(), 0, time.Second)
	defer cancel4()
	if _, ok := free.Deadline(); ok {
		t.Error("no limit and no deadline, yet a deadline")
	}
}
