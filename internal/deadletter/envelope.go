package deadletter

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// SchemaVersion is the envelope version written by this package. Decode
// refuses any other version rather than guess at its meaning.
const SchemaVersion = 1

// Stage names (R-STAGE-3).
const (
	StageFetch  = "fetch"
	StageLLM    = "llm"
	StageNotify = "notify"
)

// Envelope is the dead-letter payload (R-STAGE-4): enough to triage and replay a
// failed stage (R-STAGE-5) and nothing that must not be stored.
type Envelope struct {
	SchemaVersion    int               `json:"schema_version"`
	ID               string            `json:"id"`                // EnvelopeID(stage, original message id, first_failure_at)
	Stage            string            `json:"stage"`             // fetch|llm|notify
	ErrorClass       string            `json:"error_class"`       // retry.Class
	Retryable        bool              `json:"retryable"`         // the class was retryable, so the budget ran out
	LastStack        string            `json:"last_stack"`        // redacted error chain and panic stack
	SanitizedContext map[string]string `json:"sanitized_context"` // request ids, attempts, upstream status, hashes/ids
	FirstFailureAt   time.Time         `json:"first_failure_at"`
	LastFailureAt    time.Time         `json:"last_failure_at"`
	Attempts         int               `json:"attempts"`
	JobID            string            `json:"job_id"`
	Original         Original          `json:"original"`
	Escalated        bool              `json:"escalated"`
	Replays          int               `json:"replays"`
	Notes            []Note            `json:"notes,omitempty"`
}

// Original references the stage message that failed. Stage messages carry
// ids only, so Body is normally replayable as is; BodySHA256 is the hash of
// the body as received, before redaction, so replay tooling can tell whether
// redaction altered it (SanitizedContext["original_body_redacted"]).
type Original struct {
	MessageID  string `json:"message_id"`
	Body       string `json:"body"`
	BodySHA256 string `json:"body_sha256"`
	Queue      string `json:"queue"`
}

// Note is an operator annotation (R-STAGE-5 "Annotate dead-letter item with
// resolution notes").
type Note struct {
	At     time.Time `json:"at"`
	Action string    `json:"action"`
	Text   string    `json:"text"`
}

// EnvelopeID derives the envelope id from the stage, the original message id
// and the time of the first failure. It is deterministic so that a worker
// that crashes after writing the envelope and retries writes the same id,
// letting consumers deduplicate.
func EnvelopeID(stage, messageID string, firstFailureAt time.Time) string {
	h := sha256.New()
	h.Write([]byte(stage))
	h.Write([]byte{0})
	h.Write([]byte(messageID))
	h.Write([]byte{0})
	h.Write([]byte(firstFailureAt.UTC().Format(time.RFC3339Nano)))
	return hex.EncodeToString(h.Sum(nil))[:32]
}
