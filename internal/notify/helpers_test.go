package notify_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/criticizer/criticizer/internal/critic"
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
