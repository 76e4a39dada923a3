package explore

import (
	"context"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/drain"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/memstore"
)

// evidencePath is the in-memory evidence path behind gates.
type evidencePath struct {
	w *world
	s *memstore.Evidence
}

var _ store.Evidence = evidencePath{}

func (e evidencePath) Advance(ctx context.Context, set string, at time.Time) error {
	_, err := call(e.w, ctx, wr("evidence.Advance", set), func() (struct{}, error) { return noval(e.s.Advance(ctx, set, at)) })
	return err
}
func (e evidencePath) Drain(ctx context.Context, set string, at time.Time) error {
	_, err := call(e.w, ctx, wr("evidence.Drain", set), func() (struct{}, error) { return noval(e.s.Drain(ctx, set, at)) })
	return err
}
func (e evidencePath) State(ctx context.Context, set string) (store.EvidenceState, error) {
	return call(e.w, ctx, rd("evidence.State", set), func() (store.EvidenceState, error) { return e.w.evidenceState(ctx, set) })
}
func (e evidencePath) ClaimProbe(ctx context.Context, set string, need time.Time, every time.Duration) (bool, error) {
	return call(e.w, ctx, wr("evidence.ClaimProbe", set), func() (bool, error) { return e.s.ClaimProbe(ctx, set, need, every) })
}
func (e evidencePath) ForgetProbe(ctx context.Context, set string) error {
	_, err := call(e.w, ctx, wr("evidence.ForgetProbe", set), func() (struct{}, error) { return noval(e.s.ForgetProbe(ctx, set)) })
	return err
}

func (e evidencePath) Observe(ctx context.Context, set string, at time.Time, r store.Reading, every time.Duration) (time.Time, error) {
	return call(e.w, ctx, wr("evidence.Observe", set), func() (time.Time, error) { return e.s.Observe(ctx, set, at, r, every) })
}

// evidenceState is the evidence path as the notifier and the sweeper read
// it: the store's, unless a variant says otherwise.
func (w *world) evidenceState(ctx context.Context, set string) (store.EvidenceState, error) {
	st, err := w.evidence.State(ctx, set)
	if err == nil && w.evidenceView != nil {
		st = w.evidenceView(st)
	}
	return st, err
}

// judge is the evidence path as the notifier would judge it now.
func (w *world) judge() delivery.Evidence {
	st, _ := w.evidenceState(context.Background(), w.sc.ConfigurationSet)
	return delivery.Evidence{Newest: st.Newest, Drained: st.Drained, Bound: w.sc.Config.Margin}
}

// counter is SQS's GetQueueAttributes on the world's queues
// (drain.Counter), a gate like every call.
type counter struct{ w *world }

func (c counter) Counts(ctx context.Context, url string) (drain.Counts, error) {
	return call(c.w, ctx, rd("sqs.GetQueueAttributes", url), func() (drain.Counts, error) {
		q := c.w.feedback
		if url == q.dlq.name {
			q = q.dlq
		}
		v, f, d := q.stats(c.w.now)
		return drain.Counts{Visible: v, InFlight: f, Delayed: d}, nil
	})
}
