package explore

import (
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/job"
)

// Version 2 dead-lettered on its last receive with the recipient's row
// never sent, before, during or after version 1's look: as built,
// version 1 is mailed (TestExplore_ProtocolAsBuilt/newer-dead-lettered).
// A judge that waits for the dead-lettered version leaves version 1's job
// at notify for ever, looking again on every delayed copy: liveness
// catches it, and says the world never got quiet.
// Rules: R-QUIET-3, R-STAGE-10.
func TestExplore_OlderVersionNeverWaitsForADeadLetteredOne(t *testing.T) {
	t.Parallel()
	sc, ok := ScenarioByName("newer-dead-lettered")
	if !ok {
		t.Fatal("no newer-dead-lettered scenario")
	}
	w := newWorld(sc.withDefaults(), nil)
	v2, err := w.jobsMem.Get(t.Context(), w.jobIDs[1])
	w.close()
	if err != nil || v2.Status != job.StatusRetryableFailed || w.notifyQ.byID("notify-2").receives != sc.withDefaults().Config.MaxReceives-1 {
		t.Fatalf("the start does not leave version 2 failed, on its last receive: %+v, %v", v2, err)
	}
	v, _ := VariantByName("dead-lettered-waited-for")
	st, bad := Explore(sc, v, Options{MaxStates: maxStates, Properties: []string{"stuck"}})
	t.Log(st)
	if bad == nil || bad.Rule != "stuck" {
		t.Fatalf("found %v, want version 1 stuck at notify", bad)
	}
	if want := "job " + string(w.jobIDs[0]) + " is in_progress at notify when the healing run stopped, the world never quiet"; !strings.Contains(bad.Message, want) {
		t.Errorf("violation %q, want %q", bad.Message, want)
	}
}
