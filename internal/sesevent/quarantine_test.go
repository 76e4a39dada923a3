package sesevent_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/sesevent"
	"github.com/criticizer/criticizer/internal/store/memstore"
)

// shelf is an in-memory quarantine (blob.Store's Put).
type shelf struct {
	mu   sync.Mutex
	objs map[string][]byte
	err  error
}

func (s *shelf) Put(_ context.Context, prefix string, b []byte) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return "", "", s.err
	}
	if s.objs == nil {
		s.objs = map[string][]byte{}
	}
	ref := prefix + "/" + string(rune('a'+len(s.objs)))
	s.objs[ref] = append([]byte(nil), b...)
	return ref, "", nil
}

// A record that can never be an SES event (not JSON, JSON without an
// event type) is acknowledged, not retried into the feedback DLQ where it
// would keep the evidence path from draining: a copy is quarantined and
// counted, and the log names the object, never the body's addresses. A
// copy that cannot be stored fails the record, to be tried again.
// Rules: R-EVIDENCE-10, R-PRIVACY-1.
func TestFeedback_UndecodableQuarantinedAndAcknowledged(t *testing.T) {
	logs := &bytes.Buffer{}
	q := &shelf{}
	h := &sesevent.Handler{Deliveries: memstore.NewDeliveries(nil), Quarantine: q, Log: obs.NewLogger(logs, "info")}
	bodies := []string{"not json, from secret.person@example.com", `{"mail":{"destination":["other.person@example.com"]}}`}
	resp, err := h.Handle(context.Background(), batch(bodies...))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %v, failures %+v; want both acknowledged", err, resp.BatchItemFailures)
	}
	if len(q.objs) != 2 {
		t.Fatalf("%d quarantined copies, want 2", len(q.objs))
	}
	for ref, b := range q.objs {
		if !strings.HasPrefix(ref, sesevent.QuarantinePrefix+"/") || !strings.Contains(strings.Join(bodies, "\n"), string(b)) {
			t.Errorf("copy %s = %q: not under the prefix, or not the body", ref, b)
		}
	}
	if n := strings.Count(logs.String(), `"QuarantinedFeedback":1`); n != 2 {
		t.Errorf("QuarantinedFeedback counted %d times, want 2", n)
	}
	if strings.Contains(logs.String(), "@example.com") {
		t.Errorf("an address from a quarantined body reached the log:\n%s", logs)
	}

	q.err = errors.New("s3 down")
	resp, _ = h.Handle(context.Background(), batch(bodies[0]))
	if len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failures %+v: a record whose copy could not be kept must be tried again", resp.BatchItemFailures)
	}
}
