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
	EnvelopeID string          `dynamodbav:"envelope_id" json:"envelope_id"`
	JobID      job.ID          `dynamodbav:"job_id" json:"job_id"`
	Stage      job.Stage       `dynamodbav:"stage" json:"stage"`
	ErrorClass string          `dynamodbav:"error_class" json:"error_class"`
	State      string          `dynamodbav:"state" json:"state"` // replayed | resolved
	Envelope   json.RawMessage `dynamodbav:"envelope" json:"envelope"`
	UpdatedAt  time.Time       `dynamodbav:"updated_at" json:"updated_at"`
}

// DeliveryNote is one operator action on a delivery row held for
// reconciliation, kept as its audit trail.
type DeliveryNote struct {
	Action string    `dynamodbav:"action" json:"action"` // resolve_sent | requeue
	Note   string    `dynamodbav:"note" json:"note"`
	By     string    `dynamodbav:"by" json:"by"`
	At     time.Time `dynamodbav:"at" json:"at"`
	// Status is the row's status before the action.
	Status string `dynamodbav:"status" json:"status"`
}
