package explore

import (
	"context"
	"errors"
	"time"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/notify"
	"github.com/criticizer/criticizer/internal/store"
)

// Variants are the protocols the explorer must find at fault: the
// evidence rule main had before the drain time (kept to show the bug it
// had), and two deliberately broken ones (to show the explorer can fail).
func Variants() []*Variant {
	return append([]*Variant{
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
		{Name: "supersede-before-reached", CaughtIn: []string{"newer-refused", "newer-over-budget"}, Property: "quiet",
			Doc: "R-QUIET-3 as it was: an older version is superseded by a newer one still on its way, unless that one has visibly " +
				"failed already; when it fails afterwards, nobody is mailed", Apply: supersedeBeforeReached},
		{Name: "sending-counts-as-reached", CaughtIn: []string{"newer-refused"}, Property: "quiet",
			Doc: "broken on purpose: a newer version whose send is in flight counts as having reached the recipient; " +
				"when SES then refuses it for good, nobody is mailed", Apply: sendingCountsAsReached},
		{Name: "undone-counts-as-reached", CaughtIn: []string{"newer-rejected"}, Property: "quiet",
			Doc: "R-QUIET-3 as it was before R-QUIET-4: a newer version SES accepted counts as having reached the recipient " +
				"even once SES rejected it after its Send; the older version is never mailed", Apply: undoneCountsAsReached},
		{Name: "dead-lettered-waited-for", CaughtIn: []string{"newer-dead-lettered"}, Property: "stuck",
			Doc: "broken on purpose: a dead-lettered newer version with the recipient's row never sent is waited for; " +
				"the older version waits for ever and nobody is mailed", Apply: deadLetteredWaited},
		{Name: "enqueue-before-commit", CaughtIn: []string{"duplicate-webhooks"}, Property: "persisted",
			Doc: "broken on purpose: intake enqueues the fetch stage before its transaction commits", Apply: func(w *world) {
				w.intake.Jobs = enqueueFirst{w.intake.Jobs, stageQueue{w}}
			}},
		{Name: "no-idempotency-check", CaughtIn: []string{"duplicate-webhooks"}, Property: "intake",
			Doc: "broken on purpose: intake's write skips its conditions, so a repeated webhook creates the job again", Apply: func(w *world) {
				w.unconditionalCreates = true
			}},
		{Name: "replay-not-stored", CaughtIn: []string{"duplicate-webhooks"}, Property: "intake",
			Doc: "broken on purpose: a repeated key is answered from the job as it is now, not with the stored first answer", Apply: func(w *world) {
				w.intake.Jobs = freshReplay{w.intake.Jobs}
			}},
	}, digestVariants()...)
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
type retrying struct{ s notify.Sender }

func (r retrying) Send(ctx context.Context, id, to string, m delivery.Message) (string, error) {
	msgID, err := r.s.Send(ctx, id, to, m)
	if err != nil && !errors.As(err, new(*delivery.NotSentError)) {
		return r.s.Send(ctx, id, to, m)
	}
	return msgID, err
}

// enqueueFirst sends the fetch message before the job's transaction, as
// an intake that enqueued first would.
type enqueueFirst struct {
	api.JobCreator
	q stageQueue
}

func (e enqueueFirst) Create(ctx context.Context, req store.CreateRequest) (store.CreateResult, error) {
	if err := e.q.Enqueue(ctx, job.Message{JobID: req.Job.ID, Stage: job.StageFetch}); err != nil {
		return store.CreateResult{}, err
	}
	return e.JobCreator.Create(ctx, req)
}

// freshReplay forgets the stored answer of a repeated key: intake then
// answers it as another key for the same version (the job as it is now).
type freshReplay struct{ api.JobCreator }

func (f freshReplay) Create(ctx context.Context, req store.CreateRequest) (store.CreateResult, error) {
	res, err := f.JobCreator.Create(ctx, req)
	if err == nil && res.Outcome == store.Replayed {
		res = store.CreateResult{Outcome: store.VersionExists, Job: res.Job}
	}
	return res, err
}
