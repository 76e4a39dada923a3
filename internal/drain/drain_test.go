package drain_test

import (
	"context"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/drain"
	"github.com/criticizer/criticizer/internal/store/memstore"
)

// queues answers each read from a script: the counters of the n-th read.
type queues struct {
	script []drain.Counts
	read   []string
}

func (q *queues) Counts(_ context.Context, url string) (drain.Counts, error) {
	var n drain.Counts // past the script: empty
	if len(q.read) < len(q.script) {
		n = q.script[len(q.read)]
	}
	q.read = append(q.read, url)
	return n, nil
}

// The drain time moves only on a reading of the queue, its DLQ and the
// queue again that finds every counter zero, and to the reading's start
// less the counters' lag; a message in any state anywhere — visible, in
// flight, delayed, dead-lettered, or redriven back between the readings —
// leaves it where it was.
// Rules: R-EVIDENCE-2.
func TestCheck_MovesOnlyWhenEverythingIsEmpty(t *testing.T) {
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	empty := drain.Counts{}
	cases := []struct {
		name   string
		script []drain.Counts
		want   bool
	}{
		{"all empty", []drain.Counts{empty, empty, empty}, true},
		{"one visible", []drain.Counts{{Visible: 1}}, false},
		{"one in flight (a batch that timed out)", []drain.Counts{{InFlight: 1}}, false},
		{"one delayed", []drain.Counts{{Delayed: 1}}, false},
		{"one dead-lettered", []drain.Counts{empty, {Visible: 1}}, false},
		{"redriven back between the readings", []drain.Counts{empty, empty, {Visible: 1}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := memstore.NewEvidence(nil)
			q := &queues{script: c.script}
			chk := &drain.Checker{Counter: q, Queue: "fb", DLQ: "fb-dlq", Lag: 2 * time.Minute, Evidence: ev, Set: "set",
				Now: func() time.Time { return now }}
			got, err := chk.Check(context.Background())
			if err != nil || got != c.want {
				t.Fatalf("Check = %v, %v; want %v", got, err, c.want)
			}
			st, _ := ev.State(context.Background(), "set")
			if c.want && !st.Drained.Equal(now.Add(-2*time.Minute)) {
				t.Errorf("drain time %v, want the reading less the lag", st.Drained)
			}
			if !c.want && !st.Drained.IsZero() {
				t.Errorf("drain time moved to %v with a message in the queues", st.Drained)
			}
			if c.want && (len(q.read) != 3 || q.read[0] != "fb" || q.read[1] != "fb-dlq" || q.read[2] != "fb") {
				t.Errorf("read %v, want the queue, its DLQ, the queue", q.read)
			}
		})
	}
	if _, err := (&drain.Checker{Counter: &queues{}, Queue: "fb"}).Check(context.Background()); err == nil {
		t.Error("no DLQ configured: want an error, not a drain time")
	}
}

// Steady traffic is not a backlog: with a message always in flight in
// some feedback invocation the queue never reads empty, yet a run of clear
// readings (nothing visible or delayed, the DLQ empty) on the schedule,
// longer than the Horizon, moves the drain time to the reading less the
// Horizon: a message older than that has been received and deleted, or it
// would have been seen visible, or be in the DLQ. One visible reading
// alone is tolerated; a backlog that stays visible, a dead letter or a
// missed reading start the run again; a queue that does not tell its
// settings never counts a run.
// Rules: R-EVIDENCE-2.
func TestCheck_SteadyTrafficIsNotABacklog(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	const vt, rc, every, lag = 61 * time.Second, 10, time.Minute, 2 * time.Minute
	busy := drain.Counts{InFlight: 3, VisibilityTimeout: vt, MaxReceiveCount: rc}
	seen := drain.Counts{Visible: 1, InFlight: 3, VisibilityTimeout: vt, MaxReceiveCount: rc}
	type reading struct {
		at   time.Duration // after t0
		main drain.Counts
		dlq  drain.Counts
	}
	steady := func(from, to time.Duration) []reading {
		var rs []reading
		for at := from; at <= to; at += every {
			rs = append(rs, reading{at: at, main: busy})
		}
		return rs
	}
	join := func(parts ...[]reading) []reading {
		var rs []reading
		for _, p := range parts {
			rs = append(rs, p...)
		}
		return rs
	}
	horizon := time.Duration(rc+1)*(3*every+lag) + rc*vt // 65m10s
	cases := []struct {
		name     string
		readings []reading
		want     time.Duration // drain time after t0; -1: none
	}{
		{"steady traffic past the horizon", steady(0, 66*time.Minute), 66*time.Minute - horizon},
		{"steady traffic, not yet the horizon", steady(0, 65*time.Minute), -1},
		{"one visible reading is tolerated", join(steady(0, 30*time.Minute), []reading{{at: 31 * time.Minute, main: seen}},
			steady(32*time.Minute, 66*time.Minute)), 66*time.Minute - horizon},
		{"a backlog that stays visible ends the run", join(steady(0, 30*time.Minute),
			[]reading{{at: 31 * time.Minute, main: seen}, {at: 32 * time.Minute, main: seen}}, steady(33*time.Minute, 66*time.Minute)), -1},
		{"a dead letter ends the run", join(steady(0, 30*time.Minute),
			[]reading{{at: 31 * time.Minute, main: busy, dlq: drain.Counts{Visible: 1}}}, steady(32*time.Minute, 66*time.Minute)), -1},
		{"a missed reading starts the run again", join(steady(0, 20*time.Minute), steady(23*time.Minute, 70*time.Minute)), -1},
		{"a queue that does not tell its settings", func() []reading {
			rs := steady(0, 90*time.Minute)
			for i := range rs {
				rs[i].main = drain.Counts{InFlight: 3}
			}
			return rs
		}(), -1},
		{"an empty reading still counts at once", []reading{{at: 0, main: busy}, {at: 3 * time.Minute}}, 3*time.Minute - lag},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := memstore.NewEvidence(nil)
			var now time.Time
			for _, r := range c.readings {
				now = t0.Add(r.at)
				q := &queues{script: []drain.Counts{r.main, r.dlq, r.main}}
				chk := &drain.Checker{Counter: q, Queue: "fb", DLQ: "fb-dlq", Lag: lag, Every: every, Evidence: ev, Set: "set",
					Now: func() time.Time { return now }}
				if _, err := chk.Check(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			st, _ := ev.State(context.Background(), "set")
			switch {
			case c.want < 0 && !st.Drained.IsZero():
				t.Errorf("drain time moved to t0+%s", st.Drained.Sub(t0))
			case c.want >= 0 && !st.Drained.Equal(t0.Add(c.want)):
				t.Errorf("drain time %v, want t0+%s", st.Drained, c.want)
			}
		})
	}
}
