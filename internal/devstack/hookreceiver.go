package devstack

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// LocalHookSecret is the signing secret of `make run`'s webhook receiver
// (CRITICIZER_OUTBOUND_WEBHOOKS's "local" destination): whsec_ and the
// base64 of "local-webhook-receiver-not-prod". Never a deployment's.
const LocalHookSecret = "whsec_bG9jYWwtd2ViaG9vay1yZWNlaXZlci1ub3QtcHJvZA=="

// LocalHookPath is where `make run` serves its receiver: POST takes a
// message, GET lists what arrived.
const LocalHookPath = "/local/webhooks"

// HookReceiver is a webhook destination for the local stack and the
// tests (R-CHANNEL-8): it verifies each message's Standard Webhooks
// signature with its secret, as a receiver's library does (the
// timestamp's 5-minute tolerance included), keeps every message that
// arrived, verified or not, and answers GET with them as JSON. It can
// lose its answers after taking a message (the connection is closed with
// no response: the sender cannot tell it arrived) and answer with a
// status of the test's choosing.
type HookReceiver struct {
	wh     *standardwebhooks.Webhook
	mu     sync.Mutex
	got    []ArrivedHook
	lose   int
	loseIf func() bool
	status int
}

// ArrivedHook is one message as it arrived.
type ArrivedHook struct {
	ID        string          `json:"webhook_id"`
	Timestamp string          `json:"webhook_timestamp"`
	Signature string          `json:"webhook_signature"`
	Verified  bool            `json:"verified"`
	Error     string          `json:"error,omitempty"`
	Body      json.RawMessage `json:"body"`
	At        time.Time       `json:"at"`
	// AnswerLost: the receiver took it and dropped its answer.
	AnswerLost bool `json:"answer_lost,omitempty"`
}

// NewHookReceiver returns a receiver verifying with secret (whsec_...).
func NewHookReceiver(secret string) (*HookReceiver, error) {
	wh, err := standardwebhooks.NewWebhook(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return nil, err
	}
	return &HookReceiver{wh: wh}, nil
}

// LoseAnswers makes the next n messages arrive and their answers be lost.
func (h *HookReceiver) LoseAnswers(n int) {
	h.mu.Lock()
	h.lose = n
	h.mu.Unlock()
}

// LoseWhen makes every later message whose f says so arrive and its
// answer be lost (a campaign's seeded rate).
func (h *HookReceiver) LoseWhen(f func() bool) {
	h.mu.Lock()
	h.loseIf = f
	h.mu.Unlock()
}

// AnswerWith makes every later message be answered with status (0: 204).
func (h *HookReceiver) AnswerWith(status int) {
	h.mu.Lock()
	h.status = status
	h.mu.Unlock()
}

// Arrived returns every message that arrived, in order.
func (h *HookReceiver) Arrived() []ArrivedHook {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ArrivedHook{}, h.got...) // [] when none, not null
}

// ServeHTTP takes a POSTed message, or lists the arrived ones on GET.
func (h *HookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(h.Arrived())
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST a message, or GET the list", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	a := ArrivedHook{ID: r.Header.Get(standardwebhooks.HeaderWebhookID), Timestamp: r.Header.Get(standardwebhooks.HeaderWebhookTimestamp),
		Signature: r.Header.Get(standardwebhooks.HeaderWebhookSignature), At: time.Now().UTC()}
	if err := h.wh.Verify(body, r.Header); err != nil {
		a.Error = err.Error()
	} else {
		a.Verified = true
	}
	if json.Valid(body) {
		a.Body = body
	} else {
		a.Body, _ = json.Marshal(string(body))
	}
	h.mu.Lock()
	lose := h.lose > 0
	if lose {
		h.lose--
	} else if h.loseIf != nil {
		lose = h.loseIf()
	}
	a.AnswerLost = lose
	h.got = append(h.got, a)
	status := h.status
	h.mu.Unlock()
	if lose {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close() // taken; the answer never leaves
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	switch {
	case !a.Verified:
		http.Error(w, "signature does not verify", http.StatusUnauthorized)
	case status != 0:
		w.WriteHeader(status)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}
