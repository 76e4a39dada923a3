package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// RecordDeadLetter writes (or overwrites) the audit record of an item.
func (s *Jobs) RecordDeadLetter(ctx context.Context, r store.DeadLetterRecord) error {
	item, err := marshal(struct {
		PK   string `dynamodbav:"pk"`
		Kind string `dynamodbav:"kind"`
		deadLetterRecord
		ExpiresAt int64 `dynamodbav:"expires_at,omitempty"`
	}{PK: schema.PrefixDeadLetter + r.EnvelopeID, Kind: "deadletter", deadLetterRecord: stored[deadLetterRecord](r), ExpiresAt: expiresAt(s.now(), s.Retention)})
	if err != nil {
		return err
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item}); err != nil {
		return fmt.Errorf("record dead letter %s: %w", r.EnvelopeID, err)
	}
	return nil
}

// DeadLetter reads an item's audit record.
func (s *Jobs) DeadLetter(ctx context.Context, envelopeID string) (store.DeadLetterRecord, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": str(schema.PrefixDeadLetter + envelopeID)}})
	if err != nil {
		return store.DeadLetterRecord{}, fmt.Errorf("get dead letter %s: %w", envelopeID, err)
	}
	if len(out.Item) == 0 {
		return store.DeadLetterRecord{}, fmt.Errorf("dead letter %s: %w", envelopeID, store.ErrNotFound)
	}
	var r deadLetterRecord
	if err := unmarshal(out.Item, &r); err != nil {
		return store.DeadLetterRecord{}, err
	}
	return stored[store.DeadLetterRecord](r), nil
}

// Reopen puts a job back at the notify stage, for a delivery that must be
// sent again (a transient bounce, an operator's requeue) or finalized
// again (an operator settled a held row), and counts a revision
// (added_rev + 1). It applies to a job that finished (succeeded, or
// needs_intervention) and to one still at notify (not dead-lettered):
// there a notify run may be about to finalize from rows it read before
// the row was reopened, and the revision makes that verdict fail its
// condition, so the run goes again (FinishNotify, R-OUTBOX-8). Without it
// a bounce recorded between a run's reads and its verdict would close
// the job with the bounced row never sent again (found by
// internal/explore).
func (s *Jobs) Reopen(ctx context.Context, id job.ID) error {
	upd := sweepJobFor(expression.Set(expression.Name("stage"), expression.Value(string(job.StageNotify))).
		Set(expression.Name("status"), expression.Value(string(job.StatusInProgress))).
		Set(expression.Name("updated_at"), expression.Value(ts(s.now()))).
		Add(expression.Name(attrAddedRev), expression.Value(1)), job.StatusInProgress)
	finished := expression.Name("status").In(expression.Value(string(job.StatusSucceeded)), expression.Value(string(job.StatusNeedsIntervention))).
		And(expression.Name("stage").Equal(expression.Value(string(job.StageDone))))
	atNotify := expression.Name("stage").Equal(expression.Value(string(job.StageNotify))).
		And(expression.Name("status").NotEqual(expression.Value(string(job.StatusDeadLettered))))
	cond := expression.Or(finished, atNotify)
	return s.update(ctx, id, upd, &cond)
}

// Intervene marks a job needs_intervention because one of its rows is held
// for an operator (a row marked sent that the evidence path never
// confirmed, a row SES rejected): a job that succeeded must not keep
// reading succeeded. It applies to a job at notify or done that is not
// dead-lettered, and counts a revision (added_rev + 1): a notify run that
// read the row before it was held cannot then finalize the job succeeded
// over it (FinishNotify's condition fails and the run goes again).
func (s *Jobs) Intervene(ctx context.Context, id job.ID) error {
	upd := sweepJobFor(expression.Set(expression.Name("status"), expression.Value(string(job.StatusNeedsIntervention))).
		Set(expression.Name("updated_at"), expression.Value(ts(s.now()))).
		Add(expression.Name(attrAddedRev), expression.Value(1)), job.StatusNeedsIntervention)
	cond := expression.Name("stage").In(expression.Value(string(job.StageNotify)), expression.Value(string(job.StageDone))).
		And(expression.Name("status").NotEqual(expression.Value(string(job.StatusDeadLettered))))
	return s.update(ctx, id, upd, &cond)
}

// Restart puts a dead-lettered job back at a stage for a replay: from its
// failed stage (the default) or from fetch (--from-start, which also drops
// the fetched diff of a diff_url job so it is fetched again). It applies
// only to a job that is dead-lettered.
func (s *Jobs) Restart(ctx context.Context, id job.ID, at job.Stage, refetch bool) error {
	upd := sweepJobFor(expression.Set(expression.Name("stage"), expression.Value(string(at))).
		Set(expression.Name("status"), expression.Value(string(job.StatusInProgress))).
		Set(expression.Name("updated_at"), expression.Value(ts(s.now()))), job.StatusInProgress)
	if at == job.StageFetch {
		upd = upd.Remove(expression.Name("critique"))
		if refetch {
			upd = upd.Remove(expression.Name("diff_ref")).Remove(expression.Name("diff_sha256"))
		}
	}
	cond := expression.Name("status").Equal(expression.Value(string(job.StatusDeadLettered)))
	return s.update(ctx, id, upd, &cond)
}

func deliveryAuditKey(deliveryID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixAudit + deliveryID)}
}

// RecordDeliveryNote appends an operator action to a delivery row's audit
// trail (pk AUDIT#DELIVERY#<delivery id> in the jobs table). noteID makes
// the append idempotent: the SDK retries UpdateItem, and a list_append
// whose answer was lost would otherwise be applied twice.
func (s *Jobs) RecordDeliveryNote(ctx context.Context, deliveryID string, jobID job.ID, noteID string, n store.DeliveryNote) error {
	av, err := marshal(stored[deliveryNoteRecord](n))
	if err != nil {
		return err
	}
	upd := expression.Set(expression.Name("notes"), expression.ListAppend(
		expression.IfNotExists(expression.Name("notes"), expression.Value(&types.AttributeValueMemberL{})),
		expression.Value(&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: av}}}))).
		Set(expression.Name("kind"), expression.Value("delivery_audit")).
		Set(expression.Name("delivery_id"), expression.Value(deliveryID)).
		Set(expression.Name("job_id"), expression.Value(string(jobID))).
		Add(expression.Name("note_ids"), expression.Value(&types.AttributeValueMemberSS{Value: []string{noteID}}))
	if exp := expiresAt(s.now(), s.Retention); exp != 0 {
		upd = upd.Set(expression.Name("expires_at"), expression.Value(exp))
	}
	cond := expression.AttributeNotExists(expression.Name("note_ids")).
		Or(expression.Not(expression.Contains(expression.Name("note_ids"), noteID)))
	_, err = conditionalUpdate(ctx, s.db, s.table, deliveryAuditKey(deliveryID), upd, cond, types.ReturnValueNone)
	if errors.Is(err, store.ErrConflict) {
		return nil // this note is recorded already
	}
	if err != nil {
		return fmt.Errorf("record delivery note %s: %w", deliveryID, err)
	}
	return nil
}

// DeliveryNotes reads a delivery row's audit trail, oldest first.
func (s *Jobs) DeliveryNotes(ctx context.Context, deliveryID string) ([]store.DeliveryNote, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: deliveryAuditKey(deliveryID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("get delivery notes %s: %w", deliveryID, err)
	}
	var item struct {
		Notes []deliveryNoteRecord `dynamodbav:"notes"`
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	if err := unmarshal(out.Item, &item); err != nil {
		return nil, err
	}
	return stored[[]store.DeliveryNote](item.Notes), nil
}
