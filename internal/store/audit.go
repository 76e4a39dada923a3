package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/job"
)

// DeadLetterRecord is the operator's audit trail of a dead-letter item in
// the jobs table (pk DL#<envelope id>): what was done with it, when, and
// the remediation evidence (seed 001 §8.5: "Ensure remediation evidence is
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

// RecordDeadLetter writes (or overwrites) the audit record of an item.
func (s *Jobs) RecordDeadLetter(ctx context.Context, r DeadLetterRecord) error {
	item, err := marshal(struct {
		PK   string `dynamodbav:"pk"`
		Kind string `dynamodbav:"kind"`
		DeadLetterRecord
	}{PK: "DL#" + r.EnvelopeID, Kind: "deadletter", DeadLetterRecord: r})
	if err != nil {
		return err
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item}); err != nil {
		return fmt.Errorf("record dead letter %s: %w", r.EnvelopeID, err)
	}
	return nil
}

// DeadLetter reads an item's audit record.
func (s *Jobs) DeadLetter(ctx context.Context, envelopeID string) (DeadLetterRecord, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": str("DL#" + envelopeID)}})
	if err != nil {
		return DeadLetterRecord{}, fmt.Errorf("get dead letter %s: %w", envelopeID, err)
	}
	if len(out.Item) == 0 {
		return DeadLetterRecord{}, fmt.Errorf("dead letter %s: %w", envelopeID, ErrNotFound)
	}
	var r DeadLetterRecord
	return r, unmarshal(out.Item, &r)
}

// Reopen puts a succeeded job back at the notify stage, for a delivery that
// must be sent again (a transient bounce). It applies only to a job that
// finished; a job still at notify needs nothing: its stage is in flight.
func (s *Jobs) Reopen(ctx context.Context, id job.ID) error {
	upd := expression.Set(expression.Name("stage"), expression.Value(string(job.StageNotify))).
		Set(expression.Name("status"), expression.Value(string(job.StatusInProgress))).
		Set(expression.Name("updated_at"), expression.Value(ts(s.now())))
	cond := expression.Name("status").Equal(expression.Value(string(job.StatusSucceeded))).
		And(expression.Name("stage").Equal(expression.Value(string(job.StageDone))))
	return s.update(ctx, id, upd, &cond)
}

// Restart puts a dead-lettered job back at a stage for a replay: from its
// failed stage (the default) or from fetch (--from-start, which also drops
// the fetched diff of a diff_url job so it is fetched again). It applies
// only to a job that is dead-lettered.
func (s *Jobs) Restart(ctx context.Context, id job.ID, at job.Stage, refetch bool) error {
	upd := expression.Set(expression.Name("stage"), expression.Value(string(at))).
		Set(expression.Name("status"), expression.Value(string(job.StatusInProgress))).
		Set(expression.Name("updated_at"), expression.Value(ts(s.now())))
	if at == job.StageFetch {
		upd = upd.Remove(expression.Name("critique"))
		if refetch {
			upd = upd.Remove(expression.Name("diff_ref")).Remove(expression.Name("diff_sha256"))
		}
	}
	cond := expression.Name("status").Equal(expression.Value(string(job.StatusDeadLettered)))
	return s.update(ctx, id, upd, &cond)
}
