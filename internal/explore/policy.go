package explore

import (
	"context"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/sesevent"
)

// EvidenceOptions are a scenario's choices about the evidence path:
// the policy for uncertain sends (R-EVIDENCE-9), and records on the
// feedback queue that can never be evidence (R-EVIDENCE-10).
type EvidenceOptions struct {
	// UncertainSend is the notifier's policy for a send whose answer was
	// lost, once the path caught up past it: resend (the zero value) or
	// hold.
	UncertainSend delivery.UncertainSend
	// Undecodable is how many records that are no SES event (an
	// undecodable body published to the topic) wait on the feedback queue
	// at the start.
	Undecodable int
	// NoQuarantine takes the quarantine away from the feedback function:
	// such a record fails until the redrive policy dead-letters it, as
	// before R-EVIDENCE-10.
	NoQuarantine bool
	// MustSettle: once healed, every row is sent or delivered and every
	// job succeeded — nothing waits for a person (property "settled").
	// For worlds whose evidence path is healthy but for what the scenario
	// puts on it.
	MustSettle bool
}

// lateSends reports whether the world may publish a Send event later than
// the bound the protocol assumes: the one case the hold policy is for. The
// "evidence" property (the path never counts as caught up past an
// unprocessed Send event) rests on that bound, so it is not checked there;
// "duplicate" is.
func (w *world) lateSends() bool { return w.sc.Config.PublishBound > w.sc.Config.Margin }

// policyScenarios are the evidence path's worlds: a Send event later
// than the bound under the hold policy (never a second email; the late
// event settles the row), and an undecodable record on the feedback queue
// in front of a send that must be resent (quarantined, it does not hold
// the row: the world settles). TestExplore_LateSendEventUnderEachPolicy
// runs the first under resend too, where the explorer finds the second
// email; TestExplore_UndecodableRecordDoesNotHoldTheRow the second without
// the quarantine, where the row stays held.
func policyScenarios() []Scenario {
	one := []JobSpec{{Changelist: "cl1", Version: 1, Recipients: []string{"a@example.com"}}}
	late := DefaultConfig()
	late.PublishBound = 3 * late.Margin
	return []Scenario{
		{Name: "hold-late-send", Jobs: one, MaxFaults: 1, SendFaults: []Outcome{AnswerLost}, MaxTicks: 4, MaxSweeps: 2, MaxDepth: 22, DeepDepth: 28,
			Config: late, Evidence: EvidenceOptions{UncertainSend: delivery.HoldUncertain}},
		{Name: "undecodable-on-feedback", Jobs: one, MaxFaults: 1, SendFaults: []Outcome{}, Kills: true, KillOnly: []string{"notify"},
			MaxTicks: 3, MaxSweeps: 2, MaxDepth: 18, DeepDepth: 24,
			Evidence: EvidenceOptions{Undecodable: 1, MustSettle: true}},
	}
}

// wireEvidenceOptions gives the feedback function its quarantine and puts
// the undecodable records on the feedback queue.
func (w *world) wireEvidenceOptions() {
	if !w.sc.Evidence.NoQuarantine {
		w.fb.Quarantine = shelf{w}
	}
	for i := range w.sc.Evidence.Undecodable {
		w.feedback.add(w, fmt.Sprintf("fb-undecodable-%d", i), "not an SES event <a@example.com>", 0, time.Time{}, nil)
	}
}

// shelf is the payload bucket's quarantine prefix (blob.Store.Put),
// behind a gate like every call.
type shelf struct{ w *world }

func (s shelf) Put(ctx context.Context, prefix string, b []byte) (string, string, error) {
	ref := prefix + "/" + fmt.Sprintf("%x", len(b))
	_, err := call(s.w, ctx, wr("s3.PutObject", ref), func() (struct{}, error) {
		s.w.blobs[ref] = append([]byte(nil), b...)
		return struct{}{}, nil
	})
	return ref, "", err
}

var _ sesevent.Quarantine = shelf{}

// settled checks, once the world has healed, that every row was sent or
// delivered and every job succeeded (EvidenceOptions.MustSettle).
func (w *world) settled() *Violation {
	ctx := context.Background()
	for _, id := range w.jobIDs {
		j, err := w.jobsMem.Get(ctx, id)
		if err != nil || j.Status != job.StatusSucceeded {
			return &Violation{Rule: "settled", Message: fmt.Sprintf("job %s is %s once the world is quiet: a row is held", id, j.Status)}
		}
		for _, r := range w.rowsOf(j) {
			if r.Status != delivery.StatusSent && r.Status != delivery.StatusDelivered {
				return &Violation{Rule: "settled", Message: fmt.Sprintf("row %s is %s once the world is quiet", r.ID, r.Status)}
			}
		}
	}
	return nil
}
