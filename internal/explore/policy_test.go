package explore

import (
	"testing"

	"github.com/criticizer/criticizer/internal/delivery"
)

// A Send event later than the bound, every ordering: under the hold
// policy no row is ever sent twice and the late event settles the row
// (hold-late-send passes every property in TestExplore_ProtocolAsBuilt);
// the same world under resend sends the second email, so the property is
// not vacuous there.
// Rules: R-EVIDENCE-9, R-OUTBOX-10.
func TestExplore_LateSendEventUnderEachPolicy(t *testing.T) {
	t.Parallel()
	sc, ok := ScenarioByName("hold-late-send")
	if !ok || sc.Evidence.UncertainSend != delivery.HoldUncertain || !newWorld(sc.withDefaults(), nil).lateSends() {
		t.Fatal("no hold-late-send scenario with late Send events under the hold policy")
	}
	// The hold run is TestExplore_ProtocolAsBuilt/hold-late-send. The
	// second email takes a path longer than make test's bound there: the
	// send, a probe and its event, a tick, a sweep, the resend.
	sc.Evidence.UncertainSend = delivery.ResendUncertain
	sc.MaxDepth, sc.MaxSweeps, sc.MaxTicks = 34, 1, 3
	st, bad := Explore(sc, nil, Options{MaxStates: maxStates, Properties: []string{"duplicate"}})
	t.Log("resend:", st)
	if bad == nil || bad.Rule != "duplicate" {
		t.Fatalf("resend: found %v, want the second email a late Send event makes", bad)
	}
	t.Logf("resend: %v after %d actions", bad, bad.Depth)
}

// A record on the feedback queue that can never be an SES event, in front
// of a send that must be resent: quarantined, it does not keep the path
// from draining and the row settles (the scenario, every ordering,
// TestExplore_ProtocolAsBuilt); without the quarantine it fails into the
// feedback DLQ and the row stays held for a person.
// Rules: R-EVIDENCE-10, R-EVIDENCE-2.
func TestExplore_UndecodableRecordDoesNotHoldTheRow(t *testing.T) {
	t.Parallel()
	sc, ok := ScenarioByName("undecodable-on-feedback")
	if !ok || sc.Evidence.Undecodable == 0 || !sc.Evidence.MustSettle {
		t.Fatal("no undecodable-on-feedback scenario that must settle")
	}
	// With the quarantine: TestExplore_ProtocolAsBuilt/undecodable-on-feedback.
	sc.Evidence.NoQuarantine = true
	st, bad := Explore(sc, nil, Options{MaxStates: maxStates, Properties: []string{"settled"}})
	t.Log("no quarantine:", st)
	if bad == nil || bad.Rule != "settled" {
		t.Fatalf("no quarantine: found %v, want the row held", bad)
	}
}
