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
	n := q.script[len(q.read)]
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
