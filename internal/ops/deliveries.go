package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/queue"
	"github.com/criticizer/criticizer/internal/store"
)

// HeldDelivery is a delivery row held for reconciliation, with the
// provider evidence an operator decides by.
type HeldDelivery struct {
	DeliveryID string          `json:"delivery_id"`
	JobID      job.ID          `json:"job_id"`
	Recipient  string          `json:"recipient"`
	Status     delivery.Status `json:"status"`
	// Why says what it waits for.
	Why                   string   `json:"why"`
	Attempts              int      `json:"attempts"`
	SentBy                string   `json:"sent_by,omitempty"` // the latest its last send can have reached SES
	NotificationID        string   `json:"notification_id,omitempty"`
	NotifiedAt            string   `json:"notified_at,omitempty"`
	ProviderMessageID     string   `json:"provider_message_id,omitempty"`
	Evidence              []string `json:"evidence,omitempty"` // event types recorded, with their times
	DuplicateMessageIDs   []string `json:"duplicate_message_ids,omitempty"`
	BouncedMessageIDs     []string `json:"bounced_message_ids,omitempty"`
	ResentWithoutEvidence int      `json:"resent_without_evidence,omitempty"`
	LastErrorClass        string   `json:"last_error_class,omitempty"`
	// SkipReason says why a row was settled without a send (a
	// suppression's cause, the scope unsubscribed from, R-QUIET-*: the
	// version mailed instead, R-DIGEST-2: the digest it went into).
	SkipReason string `json:"skip_reason,omitempty"`
	// A daily digest's row (R-DIGEST-1) has no job: Period is the
	// reader's date it covers, DueAt when it was due, Entries how many
	// versions it gathered. A version's row gathered into a digest names
	// it in Digest (and its Period).
	Period  string `json:"period,omitempty"`
	DueAt   string `json:"due_at,omitempty"`
	Entries int    `json:"entries,omitempty"`
	Digest  string `json:"digest_id,omitempty"`
}

// Job is what the held list's JOB column shows: the job, or for a
// digest's row "digest <date>".
func (h HeldDelivery) Job() string {
	if h.JobID == "" && h.Period != "" {
		return "digest " + h.Period
	}
	return string(h.JobID)
}

// EvidenceView is the evidence path's state, for an operator
// (R-EVIDENCE-2): a held send is resent once the newest event is past it
// and the drain time past it plus the bound.
type EvidenceView struct {
	ConfigurationSet string `json:"configuration_set"`
	// NewestEvent is the newest SES event time recorded.
	NewestEvent string `json:"newest_event,omitempty"`
	// Drained: every message that reached the feedback queue before it
	// has been processed. LagSeconds is how far it trails now.
	Drained     string  `json:"drained,omitempty"`
	LagSeconds  float64 `json:"lag_seconds"`
	ProbeSentAt string  `json:"probe_sent_at,omitempty"`
}

// DeliveryReport is one row with its evidence and its audit trail.
type DeliveryReport struct {
	Delivery HeldDelivery         `json:"delivery"`
	Held     bool                 `json:"held"`
	Notes    []store.DeliveryNote `json:"notes,omitempty"`
	Evidence EvidenceView         `json:"evidence_path"`
}

// ErrNotHeld is returned when an operator verdict names a row that is not
// held (sent, pending, or with provider evidence that settles it).
var ErrNotHeld = errors.New("the delivery is not held for reconciliation (or provider evidence now settles it)")

func rfc(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func heldView(r delivery.Row, margin time.Duration, policy delivery.UncertainSend, now time.Time) HeldDelivery {
	v := HeldDelivery{DeliveryID: r.ID, JobID: r.JobID, Recipient: r.Recipient, Status: r.Status, Attempts: r.Attempts,
		NotificationID: r.NotificationID, NotifiedAt: rfc(r.NotifiedAt), ProviderMessageID: r.ProviderMessageID,
		DuplicateMessageIDs: r.DuplicateMessageIDs, BouncedMessageIDs: r.BouncedMessageIDs,
		ResentWithoutEvidence: r.ResentWithoutEvidence, LastErrorClass: r.LastErrorClass, SkipReason: r.SkipReason,
		Period: r.Period, DueAt: rfc(r.DueAt), Entries: len(r.Entries), Digest: r.Digest}
	for _, e := range []struct {
		name string
		at   time.Time
	}{{"Send", r.SendEventAt}, {"Delivery", r.DeliveredAt}, {"Bounce", r.BouncedAt}, {"Complaint", r.ComplainedAt}, {"Reject", r.RejectedAt}} {
		if !e.at.IsZero() {
			v.Evidence = append(v.Evidence, e.name+" "+rfc(e.at))
		}
	}
	switch r.Status {
	case delivery.StatusReconciling:
		v.Why = "marked sent, but the evidence path caught up past it and no SES event names it (an ordering violation)"
	case delivery.StatusSending:
		v.SentBy = rfc(r.SentBy())
		v.Why = "its send's answer was lost; the SES evidence path has not caught up past it"
		switch {
		case !r.Held(now, margin):
			v.Why = "its send's answer was lost; awaiting SES evidence (not yet held)"
		case policy == delivery.HoldUncertain:
			v.Why = "its send's answer was lost; held under the hold policy until an SES event names it or you settle it (resolve or requeue)"
		}
	}
	return v
}

// HeldDeliveries lists the rows an operator may have to settle: under
// reconciliation, or in `sending` past their lease with no evidence (a
// send whose answer was lost, held until the evidence path catches up).
// It scans the deliveries table.
func (o *Ops) HeldDeliveries(ctx context.Context) ([]HeldDelivery, error) {
	now := o.Now()
	var out []HeldDelivery
	// Sent rows are not held; their sentBefore bound excludes them all.
	err := o.Deliveries.Unsettled(ctx, time.Time{}, func(r delivery.Row) error {
		if r.Status == delivery.StatusSending && !now.After(r.LeaseUntil) {
			return nil // a send in flight
		}
		out = append(out, heldView(r, o.Margin, o.Policy, now))
		return nil
	})
	return out, err
}

// Delivery reads one row with its evidence, its audit trail and the state
// of the evidence path.
func (o *Ops) Delivery(ctx context.Context, id string) (DeliveryReport, error) {
	r, err := o.Deliveries.Get(ctx, id)
	if err != nil {
		return DeliveryReport{}, err
	}
	rep := DeliveryReport{Delivery: heldView(r, o.Margin, o.Policy, o.Now()), Held: held(r, o.Now())}
	if rep.Notes, err = o.Jobs.DeliveryNotes(ctx, id); err != nil {
		return rep, err
	}
	rep.Evidence, err = o.EvidencePath(ctx)
	return rep, err
}

func held(r delivery.Row, now time.Time) bool {
	return r.Status == delivery.StatusReconciling ||
		(r.Status == delivery.StatusSending && now.After(r.LeaseUntil) && r.NotificationID == "" && !r.HasEvidence())
}

// EvidencePath reads the evidence path of the configuration set.
func (o *Ops) EvidencePath(ctx context.Context) (EvidenceView, error) {
	v := EvidenceView{ConfigurationSet: o.ConfigurationSet}
	if o.Evidence == nil {
		return v, nil
	}
	st, err := o.Evidence.State(ctx, o.ConfigurationSet)
	if err != nil {
		return v, err
	}
	v.NewestEvent, v.Drained, v.ProbeSentAt = rfc(st.Newest), rfc(st.Drained), rfc(st.ProbeSentAt)
	if !st.Drained.IsZero() {
		v.LagSeconds = o.Now().Sub(st.Drained).Seconds()
	}
	return v, nil
}

// Verdict is an operator's decision on a held row.
type Verdict string

const (
	// VerdictSent: the message did go out (checked in SES or with the
	// reader); the row is marked sent and never sent again.
	VerdictSent Verdict = "resolve_sent"
	// VerdictRequeue: it did not; the sent markers are cleared and the row
	// is sent again (R-RECON-2).
	VerdictRequeue Verdict = "requeue"
)

// Settle applies an operator's verdict to a held row, records it with the
// note in the row's audit trail, and hands the job to notify, which sends
// a requeued row and finalizes the job. A note is required.
func (o *Ops) Settle(ctx context.Context, id string, v Verdict, note, by string) (delivery.Row, error) {
	if strings.TrimSpace(note) == "" {
		return delivery.Row{}, ErrNoNote
	}
	before, err := o.Deliveries.Get(ctx, id)
	if err != nil {
		return delivery.Row{}, err
	}
	if !held(before, o.Now()) {
		return before, fmt.Errorf("%s (status %s): %w", id, before.Status, ErrNotHeld)
	}
	var row delivery.Row
	switch v {
	case VerdictSent:
		row, err = o.Deliveries.ResolveSent(ctx, id)
	case VerdictRequeue:
		row, err = o.Deliveries.ClearAndRequeue(ctx, id)
	default:
		return before, fmt.Errorf("unknown verdict %q", v)
	}
	if errors.Is(err, store.ErrConflict) {
		return before, fmt.Errorf("%s changed while it was being settled (provider evidence arrived?); look again: %w", id, ErrNotHeld)
	}
	if err != nil {
		return before, err
	}
	noteID := id + "/" + o.Now().UTC().Format(time.RFC3339Nano)
	if err := o.Jobs.RecordDeliveryNote(ctx, id, row.JobID, noteID, store.DeliveryNote{Action: string(v), Note: note, By: by,
		At: o.Now().UTC(), Status: string(before.Status)}); err != nil {
		return row, fmt.Errorf("settled, but the note was not recorded: %w", err)
	}
	// A digest has no job: its own message carries it. A reply's
	// confirmation is a task of its own; its job's outcome stands.
	if !row.IsDigest() && row.Kind != delivery.KindReply {
		if err := o.Jobs.Reopen(ctx, row.JobID); err != nil && !errors.Is(err, store.ErrConflict) {
			return row, err
		}
	}
	if err := queue.New(o.SQS, o.Queues).Enqueue(ctx, row.NotifyMessage()); err != nil {
		return row, fmt.Errorf("settled; enqueue notify for %s: %w", row.NotifyMessage().JobID, err)
	}
	return row, nil
}
