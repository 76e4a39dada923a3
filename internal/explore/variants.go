package explore

import (
	"context"
	"errors"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/store"
)

// Variants are the protocols the explorer must find at fault: the
// evidence rule main had before the drain time (kept to show the bug it
// had), and two deliberately broken ones (to show the explorer can fail).
func Variants() []*Variant {
	return []*Variant{
		{Name: "main-watermark", CaughtIn: []string{"send-faults", "lost-answer-two-reviews"}, Doc: "the evidence rule of main before the drain time: a send is resent once the newest event " +
			"recorded, held back by events received but not recorded, is past the send plus the margin", Apply: mainWatermark},
		{Name: "resend-without-evidence", CaughtIn: []string{"send-faults", "lost-answer-two-reviews"}, Doc: "broken on purpose: a send whose answer was lost is resent once its lease ends, " +
			"whatever the evidence path says", Apply: func(w *world) {
			w.evidenceView = func(st store.EvidenceState) store.EvidenceState {
				far := epoch().Add(1000 * time.Hour)
				st.Newest, st.Drained = far, far
				return st
			}
		}},
		{Name: "sdk-retries-send", CaughtIn: []string{"send-faults", "lost-answer-two-reviews"}, Doc: "broken on purpose: SendEmail retried by the SDK when its answer is lost", Apply: func(w *world) {
			w.notify.Sender = retrying{w.notify.Sender}
		}},
	}
}

// VariantByName finds a variant; nil for "" (the protocol as built).
func VariantByName(name string) (*Variant, error) {
	if name == "" {
		return nil, nil
	}
	for _, v := range Variants() {
		if v.Name == name {
			return v, nil
		}
	}
	return nil, errors.New("explore: no variant " + name)
}

// mainWatermark reads the evidence path as main did: the newest event
// recorded, held back before every event the feedback function has
// received and not yet recorded (the pending set, keyed by SQS message id),
// and nothing else — an event still in the queue, never received, holds
// nothing back. The drain time is not used.
func mainWatermark(w *world) {
	w.evidenceView = func(st store.EvidenceState) store.EvidenceState {
		wm := st.Newest
		for _, q := range []*queue{w.feedback, w.feedback.dlq} {
			for _, m := range q.msgs {
				if m.deleted || m.event == nil || (m.receives == 0 && q == w.feedback) {
					continue
				}
				if b := m.event.mail.at.Add(-time.Nanosecond); b.Before(wm) {
					wm = b
				}
			}
		}
		st.Newest, st.Drained = wm, wm
		return st
	}
}

// retrying is a sender that sends again when the answer is lost, as an
// SDK's retry would.
type retrying struct{ s pipeline.Sender }

func (r retrying) Send(ctx context.Context, id, to string, m delivery.Message) (string, error) {
	msgID, err := r.s.Send(ctx, id, to, m)
	if err != nil && !errors.As(err, new(*delivery.NotSentError)) {
		return r.s.Send(ctx, id, to, m)
	}
	return msgID, err
}
