package store

import (
	"encoding/json"
	"time"

	"github.com/criticizer/criticizer/internal/job"
)

// DeadLetterRecord is the operator's audit trail of a dead-letter item in
// the jobs table (pk DL#<envelope id>): what was done with it, when, and
// the remediation evidence (R-STAGE-5: "Ensure remediation evidence is
// recorded", "Annotate dead-letter item with resolution notes").
type DeadLetterRecord struct {
	EnvelopeID string          `json:"envelope_id"`
	JobID      job.ID          `json:"job_id"`
	Stage      job.Stage       `json:"stage"`
	ErrorClass string          `json:"error_class"`
	State      string          `json:"state"` // replayed | resolved
	Envelope   json.RawMessage `json:"envelope"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

// DeliveryNote is one operator action on a delivery row held for
// reconciliation, kept as its audit trail.
type DeliveryNote struct {
	Action string    `json:"action"` // resolve_sent | requeue
	Note   string    `json:"note"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	// Status is the row's status before the action.
	Status string `json:"status"`
}
