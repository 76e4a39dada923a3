package explore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/smithy-go"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
)

// call makes f a call into the world: the process parks before it, the
// explorer picks its outcome, and the answer's digest joins the process's
// history. A FailBefore outcome fails the call as DynamoDB's 500 does,
// before it takes effect.
func call[T any](w *world, ctx context.Context, o op, f func() (T, error)) (T, error) {
	if !slices.Contains(w.sc.StoreFaults, o.name) {
		o.faults = nil
	} else {
		o.faults = []Outcome{FailBefore}
	}
	out := w.sched.gate(ctx, o)
	p := procOf(ctx)
	var v T
	var err error
	if out == FailBefore {
		err = fmt.Errorf("%s: %w", o.name, &smithy.GenericAPIError{Code: "InternalServerError", Message: "injected", Fault: smithy.FaultServer})
	} else {
		v, err = f()
	}
	if p != nil {
		p.note(o, out, digest(v, err))
	}
	return v, err
}

func rd(name, key string) op { return op{name: name, key: key} }
func wr(name, key string) op { return op{name: name, key: key, write: true} }

// rdMany reads several resources of one kind at once (a BatchGetItem):
// each is its own key, so the read conflicts with a write of any of them.
func rdMany(name string, keys []string) op {
	return op{name: name, key: strings.Join(keys, ","), keys: slices.Clone(keys)}
}

// wrMany writes several resources of one kind in one call (a
// TransactWriteItems): each is its own key.
func wrMany(name string, keys []string) op {
	o := rdMany(name, keys)
	o.write = true
	return o
}

// pair carries a call's two answers through call.
type pair[A, B any] struct {
	a A
	b B
}

func call2[A, B any](w *world, ctx context.Context, o op, f func() (A, B, error)) (A, B, error) {
	p, err := call(w, ctx, o, func() (pair[A, B], error) {
		a, b, err := f()
		return pair[A, B]{a, b}, err
	})
	return p.a, p.b, err
}

func noval(err error) (struct{}, error) { return struct{}{}, err }

// outbox is the in-memory outbox behind gates.
type outbox struct {
	w *world
	s *memstore.Deliveries
}

var _ store.Deliveries = outbox{}

func (o outbox) Ensure(ctx context.Context, r delivery.Row) (delivery.Row, bool, error) {
	op := wr("outbox.Ensure", r.ID)
	if r.StandsOn != "" {
		op = wrMany("outbox.Ensure", []string{r.ID, r.StandsOn}) // one transaction on both rows
	}
	return call2(o.w, ctx, op, func() (delivery.Row, bool, error) { return o.s.Ensure(ctx, r) })
}
func (o outbox) Get(ctx context.Context, id string) (delivery.Row, error) {
	return call(o.w, ctx, rd("outbox.Get", id), func() (delivery.Row, error) { return o.s.Get(ctx, id) })
}
func (o outbox) GetMany(ctx context.Context, ids []string) ([]delivery.Row, error) {
	return call(o.w, ctx, rdMany("outbox.GetMany", ids), func() ([]delivery.Row, error) { return o.s.GetMany(ctx, ids) })
}
func (o outbox) Claim(ctx context.Context, id, token string, lease time.Duration) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.Claim", id), func() (delivery.Row, error) { return o.s.Claim(ctx, id, token, lease) })
}
func (o outbox) MarkSent(ctx context.Context, id, token, notificationID string) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.MarkSent", id), func() (delivery.Row, error) { return o.s.MarkSent(ctx, id, token, notificationID) })
}
func (o outbox) Release(ctx context.Context, id, token string, status delivery.Status, class string) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.Release", id), func() (delivery.Row, error) { return o.s.Release(ctx, id, token, status, class) })
}
func (o outbox) Backfill(ctx context.Context, id, notificationID string, at time.Time) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.Backfill", id), func() (delivery.Row, error) { return o.s.Backfill(ctx, id, notificationID, at) })
}
func (o outbox) Requeue(ctx context.Context, id string, class string) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.Requeue", id), func() (delivery.Row, error) { return o.s.Requeue(ctx, id, class) })
}
func (o outbox) Awaiting(ctx context.Context, id string) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.Awaiting", id), func() (delivery.Row, error) { return o.s.Awaiting(ctx, id) })
}
func (o outbox) RecordEvent(ctx context.Context, id string, e store.Event) (delivery.Row, store.EventOutcome, error) {
	return call2(o.w, ctx, wr("outbox.RecordEvent", id), func() (delivery.Row, store.EventOutcome, error) { return o.s.RecordEvent(ctx, id, e) })
}
func (o outbox) RecordDuplicate(ctx context.Context, r delivery.Row, messageID string) (bool, error) {
	return call(o.w, ctx, wr("outbox.RecordDuplicate", r.ID), func() (bool, error) { return o.s.RecordDuplicate(ctx, r, messageID) })
}
func (o outbox) Skip(ctx context.Context, id string, status delivery.Status, reason string) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.Skip", id), func() (delivery.Row, error) { return o.s.Skip(ctx, id, status, reason) })
}
func (o outbox) SettleQuiet(ctx context.Context, id string, status delivery.Status, reason, on string) (delivery.Row, error) {
	// One transaction on both rows.
	return call(o.w, ctx, wrMany("outbox.SettleQuiet", []string{id, on}), func() (delivery.Row, error) {
		return o.s.SettleQuiet(ctx, id, status, reason, on)
	})
}
func (o outbox) Revive(ctx context.Context, id, on string) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.Revive", id), func() (delivery.Row, error) { return o.s.Revive(ctx, id, on) })
}
func (o outbox) ResendAfterNotDelivered(ctx context.Context, id, msgID, class string, at time.Time, max int) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.ResendAfterNotDelivered", id), func() (delivery.Row, error) {
		return o.s.ResendAfterNotDelivered(ctx, id, msgID, class, at, max)
	})
}
func (o outbox) Reject(ctx context.Context, id, msgID string, at time.Time) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.Reject", id), func() (delivery.Row, error) { return o.s.Reject(ctx, id, msgID, at) })
}
func (o outbox) MarkReconciling(ctx context.Context, id string) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.MarkReconciling", id), func() (delivery.Row, error) { return o.s.MarkReconciling(ctx, id) })
}
func (o outbox) ResolveSent(ctx context.Context, id string) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.ResolveSent", id), func() (delivery.Row, error) { return o.s.ResolveSent(ctx, id) })
}
func (o outbox) ClearAndRequeue(ctx context.Context, id string) (delivery.Row, error) {
	return call(o.w, ctx, wr("outbox.ClearAndRequeue", id), func() (delivery.Row, error) { return o.s.ClearAndRequeue(ctx, id) })
}
func (o outbox) Unsettled(ctx context.Context, before time.Time, fn func(delivery.Row) error) error {
	_, err := call(o.w, ctx, rd("outbox.Unsettled", "*"), func() (struct{}, error) { return noval(o.s.Unsettled(ctx, before, fn)) })
	return err
}

// jobs is the in-memory jobs table behind gates: what notify, feedback
// and the sweeper call.
type jobs struct {
	w *world
	s *memstore.Jobs
}

func (j jobs) Get(ctx context.Context, id job.ID) (job.Job, error) {
	return call(j.w, ctx, rd("jobs.Get", string(id)), func() (job.Job, error) { return j.s.Get(ctx, id) })
}
func (j jobs) Advance(ctx context.Context, id job.ID, from job.Stage, attempt int, status job.Status, w store.JobWrite) error {
	_, err := call(j.w, ctx, wr("jobs.Advance", string(id)), func() (struct{}, error) { return noval(j.s.Advance(ctx, id, from, attempt, status, w)) })
	return err
}
func (j jobs) SetStatus(ctx context.Context, id job.ID, at job.Stage, status job.Status, w store.JobWrite) error {
	_, err := call(j.w, ctx, wr("jobs.SetStatus", string(id)), func() (struct{}, error) { return noval(j.s.SetStatus(ctx, id, at, status, w)) })
	return err
}
func (j jobs) NoEmailReviewers(ctx context.Context, id job.ID) ([]string, error) {
	return call(j.w, ctx, rd("jobs.NoEmailReviewers", string(id)), func() ([]string, error) { return j.s.NoEmailReviewers(ctx, id) })
}
func (j jobs) GetSourceRef(ctx context.Context, id job.ID) (store.SourceRef, error) {
	return call(j.w, ctx, rd("jobs.GetSourceRef", string(id)), func() (store.SourceRef, error) { return j.s.GetSourceRef(ctx, id) })
}
func (j jobs) PinBase(ctx context.Context, id job.ID, sha string) (string, error) {
	return call(j.w, ctx, wr("jobs.PinBase", string(id)), func() (string, error) { return j.s.PinBase(ctx, id, sha) })
}
func (j jobs) AddReviewers(ctx context.Context, id job.ID, addrs, identities []string) (job.Job, error) {
	return call(j.w, ctx, wr("jobs.AddReviewers", string(id)), func() (job.Job, error) { return j.s.AddReviewers(ctx, id, addrs, identities) })
}
func (j jobs) FinishNotify(ctx context.Context, id job.ID, attempt int, status job.Status, addedRev int) error {
	_, err := call(j.w, ctx, wr("jobs.FinishNotify", string(id)), func() (struct{}, error) { return noval(j.s.FinishNotify(ctx, id, attempt, status, addedRev)) })
	return err
}
func (j jobs) Reopen(ctx context.Context, id job.ID) error {
	if p := procOf(ctx); p != nil {
		// An invocation that reopens a job enqueues it next: it is at
		// work on it (checkDelete), whichever job its messages name — a
		// Reject of one version reopens the job of an older one whose row
		// stood on it (R-QUIET-4).
		if p.jobs == nil {
			p.jobs = map[job.ID]bool{}
		}
		p.jobs[id] = true
	}
	_, err := call(j.w, ctx, wr("jobs.Reopen", string(id)), func() (struct{}, error) { return noval(j.s.Reopen(ctx, id)) })
	return err
}
func (j jobs) Intervene(ctx context.Context, id job.ID) error {
	_, err := call(j.w, ctx, wr("jobs.Intervene", string(id)), func() (struct{}, error) { return noval(j.s.Intervene(ctx, id)) })
	return err
}
func (j jobs) StuckJobs(ctx context.Context, before time.Time, fn func(job.Job) error) error {
	_, err := call(j.w, ctx, rd("jobs.StuckJobs", "*"), func() (struct{}, error) { return noval(j.s.StuckJobs(ctx, before, fn)) })
	return err
}

// recipients is the in-memory standings behind gates.
type recipients struct {
	w *world
	s *memstore.Preferences
}

func (r recipients) Standings(ctx context.Context, ids []string) (map[string]delivery.Standing, error) {
	return call(r.w, ctx, rd("recipients.Standings", strings.Join(ids, ",")), func() (map[string]delivery.Standing, error) { return r.s.Standings(ctx, ids) })
}
func (r recipients) Suppress(ctx context.Context, id, reason string, at time.Time) error {
	_, err := call(r.w, ctx, wr("recipients.Suppress", id), func() (struct{}, error) { return noval(r.s.Suppress(ctx, id, reason, at)) })
	return err
}

// digest is a short, deterministic account of a call's answer: what a
// process's next steps can depend on.
func digest(v any, err error) string {
	var s string
	switch x := v.(type) {
	case delivery.Row:
		s = rowDigest(x)
	case []delivery.Row:
		var parts []string
		for _, r := range x {
			parts = append(parts, rowDigest(r))
		}
		s = "[" + strings.Join(parts, " ") + "]"
	case job.Job:
		s = fmt.Sprintf("%s/%s/%d", x.Stage, x.Status, x.AddedRev)
	case pair[delivery.Row, bool]:
		s = rowDigest(x.a) + fmt.Sprint(x.b)
	case pair[delivery.Row, store.EventOutcome]:
		s = rowDigest(x.a) + fmt.Sprint(x.b)
	case store.CreateResult:
		s = fmt.Sprintf("%v/%s/%d", x.Outcome, x.Job.Status, len(x.ResponseBody))
	case []byte:
		s = fmt.Sprintf("%d bytes", len(x))
	case struct{}:
	default:
		s = fmt.Sprint(v)
	}
	if err != nil {
		s += " err=" + err.Error()
	}
	return s
}

func rowDigest(r delivery.Row) string {
	return fmt.Sprintf("%s/%s/%s/%s/%s/%t/%d/%s/%s/%v", r.Status, r.NotificationID, r.ProviderMessageID, r.ClaimToken,
		stamp(r.LeaseUntil), r.HasEvidence(), r.BounceResends, r.Resolution, r.StandsOn, r.Dependents)
}

// stamp prints a time compactly for digests and hashes.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("15:04:05.000")
}
