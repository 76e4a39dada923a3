package explore

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// maxStates is the safety cap of make test's bounded run; each scenario's
// bounds keep it far below (a run that hits it fails: its bounds were
// chosen too wide for make test).
const maxStates = 400_000

// Every scenario explored completely within its bounds, the protocol as
// built: no recipient gets two emails for one row, the evidence path never
// counts as caught up past an unprocessed Send event, no job is succeeded
// early, and once healed every row is sent, skipped or held for a person
// and every job has a verdict. With intake in front (duplicate-webhooks):
// one job per idempotency key and review version, a repeated key answered
// byte for byte as the first, a stage message only for a job persisted at
// that stage, and no accepted job lost. With the quiet rules
// (superseded, newer-refused, newer-over-budget, newer-dead-lettered): a
// row settled quietly is never sent, the latest version is mailed, a row
// is superseded only by a version that reached its recipient, and when
// the newer version fails (refused by SES while the older one looks,
// refused by its budget, dead-lettered with the row unsent) before,
// during or after the older one's look, the recipient is mailed one
// version, the newest that could reach them, and no job waits for ever;
// and when SES rejects the newer version after its Send (newer-rejected),
// whether the older one was superseded by it already or looks after, the
// older one is mailed once and no quiet row stands on the rejected one.
// With a daily reader (digest-close): each version reaches them once, in
// one digest, whatever the order of its notify and the digest's close and
// send, and a job succeeds only once its rows' entries are held. In every
// scenario, what AWS does besides (two sweepers, two notifiers and a
// sweeper, deadlines, batches): no stage message is deleted with its work
// neither done nor handed on, no Send event's message before the event is
// on its row, no message of a batch starts past its last start, no row is
// reconciled in a world that keeps the publish bound, and the sweeper
// hands back a stuck row and a stuck job. And in every scenario but the
// digests', once quiet, what reached each reader is what the owed oracle
// (internal/owed) says they are owed from the world's own record: nothing
// owed is lost, nothing delivered is not owed — two versions' webhooks
// in either order or at once (pushes-out-of-order: the late one stale,
// never mailed), a permanent bounce after the newer version's Send
// (newer-bounced: the older version mailed to no one). The deep run is
// make explore.
// Rules: R-OUTBOX-10, R-EVIDENCE-2, R-OUTBOX-8, R-INTAKE-1, R-INTAKE-3, R-INTAKE-5, R-STAGE-7, R-QUIET-3, R-QUIET-4, R-STAGE-8, R-STAGE-9, R-STAGE-10, R-RECON-1, R-EVIDENCE-1, R-DIGEST-1, R-DIGEST-2, R-DIGEST-3, R-OWED-1, R-SOURCE-6.
func TestExplore_ProtocolAsBuilt(t *testing.T) {
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			st, bad := Explore(sc, nil, Options{MaxStates: maxStates})
			t.Log(st)
			if bad != nil {
				t.Fatalf("%v\n%s\nsave it with: go run ./cmd/explore -shallow -scenario %s -write internal/explore/testdata/counterexamples",
					bad, Explain(sc, nil, bad.Trace), sc.Name)
			}
			if !st.Complete {
				t.Errorf("stopped at %d states before the scenario's bounds were explored: narrow its bounds", st.States)
			}
		})
	}
}

// The evidence rule main had (the newest event recorded, held back only
// by events already received) sends a second email when a lost answer's
// Send event waits in the feedback queue while another review's event is
// processed: the explorer finds it, and the shortest trace shows it.
// Rules: R-EVIDENCE-2.
func TestExplore_MainRuleLateEventDuplicate(t *testing.T) {
	sc, _ := ScenarioByName("lost-answer-two-reviews")
	v, _ := VariantByName("main-watermark")
	st, bad := Explore(sc, v, Options{MaxStates: maxStates, Properties: []string{"duplicate"}})
	t.Log(st)
	if bad == nil || bad.Rule != "duplicate" {
		t.Fatalf("found %v, want a duplicate email", bad)
	}
	trace := Explain(sc, v, bad.Trace)
	t.Log(trace)
	// The story: an answer lost, its Send event published and left in the
	// queue, the other review's event processed first, the row resent.
	var lost, published, otherProcessed, requeued bool
	for _, a := range bad.Trace {
		switch {
		case a.Kind == Step && a.Out == AnswerLost:
			lost = true
		case a.Kind == Publish && lost:
			published = true
		case a.Kind == Step && a.Note == "evidence.Advance(criticizer)" && published:
			otherProcessed = true
		case a.Kind == Step && len(a.Note) > 14 && a.Note[:14] == "outbox.Requeue" && otherProcessed:
			requeued = true
		}
	}
	if !lost || !published || !otherProcessed || !requeued {
		t.Errorf("the trace does not tell the late-event story (lost %t, published %t, other event first %t, resent %t)",
			lost, published, otherProcessed, requeued)
	}
	// The same world with the rule as built finds nothing:
	// TestExplore_ProtocolAsBuilt/lost-answer-two-reviews.
}

// Deliberately broken protocols are caught, each with a trace: the
// explorer can fail. Among them intake's: enqueueing before the
// transaction commits (persisted before enqueued), skipping the
// transaction's conditions (one job per key and version), answering a
// repeated key afresh (the first answer byte for byte); and the rule
// R-QUIET-3 had before: superseding by a newer version still on its way,
// which leaves nobody mailed when that version then fails; the rule it
// had before R-QUIET-4: a version SES rejected after its Send counted as
// reached, which leaves nobody mailed; and two
// digests that lose a version: closed on entries added after it was
// rendered, or taking a closed digest's refusal for the entry held.
// Rules: R-OUTBOX-5, R-OUTBOX-6, R-INTAKE-1, R-INTAKE-3, R-INTAKE-5, R-STAGE-7, R-QUIET-3, R-QUIET-4, R-DIGEST-2, R-DIGEST-3.
func TestExplore_BrokenVariantsAreCaught(t *testing.T) {
	for _, v := range Variants() {
		for _, name := range v.CaughtIn {
			t.Run(v.Name+"/"+name, func(t *testing.T) {
				t.Parallel()
				sc, ok := ScenarioByName(name)
				if !ok {
					t.Fatalf("no scenario %s", name)
				}
				st, bad := Explore(sc, v, Options{MaxStates: maxStates, Properties: []string{v.Breaks()}})
				if bad == nil || bad.Rule != v.Breaks() {
					t.Fatalf("not caught: %v (%v)", st, bad)
				}
				t.Logf("%v after %d explored actions (%v)", bad, bad.Depth, st)
			})
		}
	}
}

// Every counterexample kept under testdata/counterexamples replays: a
// variant's trace still breaks its rule (the explorer would still find
// it); a trace of the protocol as built, a bug found and fixed, now breaks
// nothing.
func TestExplore_Regressions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "counterexamples", "*.trace"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no counterexamples (%v)", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tf, err := ReadTrace(f)
			if err != nil {
				t.Fatal(err)
			}
			sc, ok := ScenarioByName(tf.Scenario)
			if !ok {
				t.Fatalf("no scenario %q", tf.Scenario)
			}
			v, err := VariantByName(tf.Variant)
			if err != nil {
				t.Fatal(err)
			}
			// A variant's trace was found checking the rule it breaks; the
			// protocol as built is held to every rule.
			o := Options{}
			if v != nil {
				o.Properties = []string{tf.Breaks}
			}
			bad, err := Replay(sc, v, tf.Actions, o)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case v == nil && bad != nil:
				t.Fatalf("the protocol as built breaks %s again:\n%s", bad.Rule, Explain(sc, v, bad.Trace))
			case v != nil && (bad == nil || bad.Rule != tf.Breaks):
				t.Fatalf("want %s, got %v", tf.Breaks, bad)
			}
		})
	}
}

// The queue model keeps SQS's rules the protocol relies on: a received
// message is hidden for the visibility timeout and counted in flight; past
// maxReceiveCount it moves to the DLQ with its id; a redrive gives it a
// new id; the counters see every state.
func TestQueue_VisibilityReceivesRedrive(t *testing.T) {
	w := &world{now: epoch(), sched: newSched()}
	q := &queue{name: "q", visibility: time.Minute, maxReceives: 2, dlq: &queue{name: "q-dlq"}}
	m := q.add(w, "m1", "{}", 0, time.Time{}, nil)
	if v, f, d := q.stats(w.now); v != 1 || f != 0 || d != 0 {
		t.Fatalf("sent: %d %d %d", v, f, d)
	}
	if _, ok := q.receive(w, m); !ok || len(q.visible(w.now)) != 0 {
		t.Fatal("received: still visible")
	}
	if _, f, _ := q.stats(w.now); f != 1 {
		t.Fatal("received: not counted in flight")
	}
	w.now = w.now.Add(time.Minute)
	if len(q.visible(w.now)) != 1 {
		t.Fatal("not visible again after the visibility timeout")
	}
	q.receive(w, m)
	w.now = w.now.Add(time.Minute)
	if _, ok := q.receive(w, m); ok {
		t.Fatal("a third receive past maxReceiveCount 2 was delivered")
	}
	if len(q.dlq.visible(w.now)) != 1 || q.dlq.visible(w.now)[0].id != "m1" {
		t.Fatal("not moved to the DLQ with its id")
	}
	if n := q.dlq.redrive(w, q); n != 1 || q.visible(w.now)[0].id == "m1" {
		t.Fatal("a redrive kept the message id")
	}
	d := q.add(w, "m2", "{}", time.Minute, time.Time{}, nil)
	if _, _, delayed := q.stats(w.now); delayed != 1 || d.receives != 0 {
		t.Fatal("a delayed message is not counted delayed")
	}
}

// Two steps on different rows commute; two on one row, a tick and
// anything, a queue read and an add to it, do not.
func TestFootprint_Independence(t *testing.T) {
	row := func(id string, acc access) footprint { return footprint{{"clock", read}, {"row/" + id, acc}} }
	cases := []struct {
		a, b footprint
		want bool
	}{
		{row("a", write), row("b", write), true},
		{row("a", write), row("a", read), false},
		{row("a", read), row("a", read), true},
		{row("a", write), footprint{{"clock", write}}, false},
		{footprint{{"queue/feedback", add}}, footprint{{"queue/feedback", add}}, true},
		{footprint{{"queue/feedback", add}}, footprint{{"queue/feedback", read}}, false},
		{footprint{{"queue/feedback/m1", write}}, footprint{{"queue/feedback", read}}, false},
		{footprint{{"queue/feedback/m1", write}}, footprint{{"queue/feedback-dlq", read}}, true},
		{footprint{{"row", read}}, row("a", write), false},
	}
	for i, c := range cases {
		if got := independent(c.a, c.b); got != c.want {
			t.Errorf("%d: independent(%v, %v) = %t", i, c.a, c.b, got)
		}
	}
}

// A read of several rows at once (BatchGetItem: the quiet rules' look
// at newer and earlier versions of many recipients) conflicts with a
// write of any of them, and with no other row's: partial-order
// reduction may not take notify's multi-recipient read and another
// notifier's claim of one of those rows for independent.
func TestFootprint_ManyRowsReadEachRow(t *testing.T) {
	many := opUses(rdMany("outbox.GetMany", []string{"d_a", "d_b"}))
	for _, c := range []struct {
		o    op
		want bool
	}{
		{wr("outbox.Claim", "d_a"), false},
		{wr("outbox.Skip", "d_b"), false},
		{wr("outbox.Claim", "d_c"), true},
		{rd("outbox.Get", "d_a"), true},
		{rd("outbox.Unsettled", "*"), true},
		{wr("jobs.FinishNotify", "d_a"), true},
	} {
		if got := independent(many, opUses(c.o)); got != c.want {
			t.Errorf("GetMany(d_a,d_b) and %s: independent %t, want %t", c.o, got, c.want)
		}
	}
}

// Every action label parses back to the action.
func TestParseLabel_RoundTrip(t *testing.T) {
	for _, a := range []Action{{Kind: Step, Target: "notify#1", Out: AnswerLost}, {Kind: Deliver, Target: "notify-1"},
		{Kind: Publish, Target: "Send(ses-notify#1.2)"}, {Kind: Again, Target: "Send(ses-x)"}, {Kind: Tick, Target: "+2m1s"},
		{Kind: Sweep}, {Kind: Kill, Target: "feedback#2"}, {Kind: Redrive, Target: "feedback-dlq"}} {
		got, err := ParseLabel(a.Label())
		if err != nil || got.Label() != a.Label() {
			t.Errorf("%q: %v %v", a.Label(), got, err)
		}
	}
	if !slices.ContainsFunc(Variants(), func(v *Variant) bool { return v.Name == "main-watermark" }) {
		t.Error("the main-watermark variant is gone")
	}
}

// make explore's bounds are the ones docs/chaos.md's deep figures were
// measured at, whatever make test's bounds are cut to.
func TestScenarios_DeepKeepsPublishedBounds(t *testing.T) {
	want := map[string]int{"send-faults": 32, "lost-answer-two-reviews": 30, "two-versions": 28, "superseded": 27, "store-faults": 34,
		"kills-and-redrive": 30, "events-twice": 28, "transient-bounce": 32, "reject-and-complaint": 26, "two-notifiers": 34,
		"duplicate-webhooks": 15, "hold-late-send": 28, "undecodable-on-feedback": 24,
		"requeue-race": 26, "overlapping-sweeps": 32, "deadline-batches": 24, "lost-message-sweeps": 28,
		"pushes-out-of-order": 12}
	for name, d := range supersedeDeepDepths() {
		want[name] = d
	}
	for name, d := range digestDeepDepths() {
		want[name] = d
	}
	for _, sc := range Scenarios() {
		d := sc.Deep()
		if d.MaxDepth != want[sc.Name] {
			t.Errorf("%s: make explore's depth %d, docs/chaos.md's figures were measured at %d", sc.Name, d.MaxDepth, want[sc.Name])
		}
		if d.MaxDepth <= sc.MaxDepth {
			t.Errorf("%s: deep depth %d is not deeper than make test's %d", sc.Name, d.MaxDepth, sc.MaxDepth)
		}
	}
}
