package notify_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/notify"
	"github.com/criticizer/criticizer/internal/store"
)

// The llm stage's stand-ins, for the tests that run a version through
// llm before notify (internal/pipeline's tests have their own).

// oneBlob serves the same diff for every reference.
type oneBlob string

func (b oneBlob) Put(context.Context, string, []byte) (string, string, error) { return "", "", nil }
func (b oneBlob) Get(context.Context, string, int64) ([]byte, error)          { return []byte(b), nil }

// recordingCritic keeps the Input it was given and answers with a
// critique that has a ledger.
type recordingCritic struct{ in critic.Input }

func (r *recordingCritic) Review(_ context.Context, in critic.Input) (critic.Critique, error) {
	r.in = in
	return critic.Critique{Critic: "fake/1", Summary: "s", Findings: []critic.Finding{}, Ledger: &critic.Ledger{Fingerprint: "f"},
		Usage: &critic.Usage{InputTokens: 10, OutputTokens: 2}, Changes: &critic.Changes{Since: 1, Reviewed: 2, Carried: 18}}, nil
}

// memBlobs is a content-addressed blob store in memory.
type memBlobs struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (b *memBlobs) Put(_ context.Context, _ string, body []byte) (string, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sum := sha256.Sum256(body)
	ref := hex.EncodeToString(sum[:])
	if b.m == nil {
		b.m = map[string][]byte{}
	}
	b.m[ref] = append([]byte(nil), body...)
	return ref, ref, nil
}

func (b *memBlobs) Get(_ context.Context, ref string, _ int64) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[ref], nil
}

// gateOpts are the features a test's notifier has beyond the recipients'
// records: each lists its gate (setGates).
type gateOpts struct {
	domains delivery.Domains
	mutes   notify.Mutes
	quiet   *notify.QuietConfig
	digests store.Digests
	clock   func() time.Time
}

// setGates lists n's gates as the wiring does for what n has: the
// standing and reply gates when it reads recipients' records
// (n.Recipients), and those of o.
func setGates(t testing.TB, n *notify.Notify, o gateOpts) {
	t.Helper()
	var list []notify.Gate
	add := func(g notify.Gate, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, g)
	}
	if o.domains.On() {
		add(notify.NewDomainGate(o.domains))
	}
	if n.Recipients != nil {
		add(notify.NewStandingGate(), nil)
	}
	if o.mutes != nil {
		add(notify.NewMuteGate(o.mutes))
	}
	if o.quiet != nil {
		add(notify.NewQuietGate(*o.quiet))
	}
	if o.digests != nil {
		clock := o.clock
		if clock == nil {
			clock = n.Now
		}
		add(notify.NewDigestGate(notify.DigestConfig{Digests: o.digests, Standings: n.Recipients, Clock: clock}))
	}
	if n.Recipients != nil {
		add(notify.NewReplyGate(n.Recipients))
	}
	g, err := notify.NewGates(list...)
	if err != nil {
		t.Fatal(err)
	}
	n.Gates = g
}
