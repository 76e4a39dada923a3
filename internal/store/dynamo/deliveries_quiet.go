package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store"
)

// A quiet settlement (R-QUIET-1..3) rests on another row: the newer
// version that reached the recipient, or the version whose content they
// had. That row can be undone later — SES publishes a Reject or a Bounce
// after the Send event — and then the settlement rests on nothing. So a
// row is settled quietly in one transaction with the row it stands on:
// the settled row names it (stands_on), the other lists the settled row
// among its dependents, on condition that it still carries the
// settlement (delivery.Row.Carries). A Reject or a bounce recorded on
// that row later returns its dependents with it (ALL_NEW), and feedback
// revives each (Revive, R-QUIET-4); one recorded before fails the
// transaction's condition (ErrNotReached), and the notifier decides
// again. Either way no quiet row is left standing on an undone one,
// whatever the interleaving.

const (
	attrStandsOn    = "stands_on"
	attrDependents  = "dependents"
	attrRevivedFrom = "revived_from"
)

// carries is delivery.Row.Carries(status) as a condition on the row a
// quiet settlement of status stands on.
func carries(status delivery.Status) expression.ConditionBuilder {
	had := []delivery.Status{delivery.StatusSkippedSameDiff, delivery.StatusSkippedNothingNew}
	if status == delivery.StatusSuperseded {
		had = append(had, delivery.StatusSuperseded, delivery.StatusDigested)
	}
	sentOrHad := expression.Or(expression.AttributeExists(expression.Name(attrNotifiedAt)),
		expression.AttributeExists(expression.Name(attrNotificationID)), statusIn(had))
	return rowExists().And(notSet(attrEvidenceRejectAt)).And(notSet(attrEvidenceBounceAt)).And(sentOrHad)
}

// standOn is the half of a quiet settlement written to the row it stands
// on: the settled row joins its dependents (a string set ADD, which a
// replay repeats harmlessly), while it carries a settlement of status.
func (s *Deliveries) standOn(on, id string, status delivery.Status) (types.TransactWriteItem, error) {
	upd := expression.Add(expression.Name(attrDependents), expression.Value(&types.AttributeValueMemberSS{Value: []string{id}}))
	return s.txUpdate(on, upd, carries(status))
}

// txUpdate is one conditional update of row id in a transaction, its old
// item returned when the condition fails.
func (s *Deliveries) txUpdate(id string, upd expression.UpdateBuilder, cond expression.ConditionBuilder) (types.TransactWriteItem, error) {
	e, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("build update of delivery %s: %w", id, err)
	}
	return types.TransactWriteItem{Update: &types.Update{TableName: &s.table, Key: deliveryKey(id),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}, nil
}

// transact writes items in one TransactWriteItems call. It returns nil
// when they were written, and the cancellation reasons when a condition
// failed (one per item, in order: "ConditionalCheckFailed" with the old
// item, or "None"). A transaction DynamoDB cancelled for a conflict with
// another one in flight wrote nothing, and is sent again as a new
// transaction with a token of its own (txToken, R-STORE-2); the SDK's
// retries of one call keep its token, so a call whose answer was lost is
// answered as a replay of its success, never applied twice.
func (s *Deliveries) transact(ctx context.Context, what string, items []types.TransactWriteItem) ([]types.CancellationReason, error) {
	input := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	for attempt := 0; ; attempt++ {
		var err error
		if input.ClientRequestToken, err = txToken(); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		_, err = s.db.TransactWriteItems(ctx, input)
		if err == nil {
			return nil, nil
		}
		var canceled *types.TransactionCanceledException
		if !errors.As(err, &canceled) {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		conflict, failed := false, false
		for _, r := range canceled.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "ConditionalCheckFailed":
				failed = true
			case "TransactionConflict":
				conflict = true
			}
		}
		if failed {
			return canceled.CancellationReasons, nil
		}
		if !conflict || attempt >= 8 {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(10*(attempt+1)) * time.Millisecond):
		}
	}
}

// refused reports whether item i of a cancelled transaction failed its
// condition.
func refused(reasons []types.CancellationReason, i int) bool {
	return i < len(reasons) && aws.ToString(reasons[i].Code) == "ConditionalCheckFailed"
}

// SettleQuiet settles a row never sent as status (superseded,
// skipped_same_diff, skipped_nothing_new) with reason, standing on row on
// (R-QUIET-1..3): one transaction of two conditional writes, the row's —
// only while it is claimable and carries no sign of a send, as Skip — and
// the other's — only while it carries the settlement
// (delivery.Row.Carries), which then lists the row among its dependents.
// ErrConflict: the row was claimed or settled meanwhile; ErrNotReached:
// the row it would stand on does not carry it (any more). The row is
// returned as written.
func (s *Deliveries) SettleQuiet(ctx context.Context, id string, status delivery.Status, reason, on string) (delivery.Row, error) {
	if !status.Quiet() || on == "" || on == id {
		return delivery.Row{}, fmt.Errorf("settle delivery %s as %s on %q: not a quiet settlement", id, status, on)
	}
	settle, err := s.txUpdate(id, setStatus(status).
		Set(expression.Name(attrSkipReason), expression.Value(reason)).
		Set(expression.Name(attrStandsOn), expression.Value(on)).
		Set(expression.Name(attrUpdatedAt), expression.Value(ts(s.now()))),
		claimableStatus().And(neverSent()))
	if err != nil {
		return delivery.Row{}, err
	}
	stand, err := s.standOn(on, id, status)
	if err != nil {
		return delivery.Row{}, err
	}
	reasons, err := s.transact(ctx, "settle delivery "+id+" quietly", []types.TransactWriteItem{settle, stand})
	switch {
	case err != nil:
		return delivery.Row{}, err
	case refused(reasons, 0):
		return delivery.Row{}, fmt.Errorf("settle delivery %s: %w", id, store.ErrConflict)
	case reasons != nil:
		return delivery.Row{}, fmt.Errorf("settle delivery %s on %s: %w", id, on, store.ErrNotReached)
	}
	return s.Get(ctx, id)
}

// ensureStanding creates r, settled quietly on r.StandsOn as it is
// created (R-QUIET-2 for a reader whose only new findings are ones they
// marked wrong), in one transaction with that row's dependents, as
// SettleQuiet. A row that exists is returned as stored; ErrNotReached:
// the row it would stand on does not carry it, and nothing was written.
func (s *Deliveries) ensureStanding(ctx context.Context, r delivery.Row, item map[string]types.AttributeValue) (delivery.Row, bool, error) {
	if !r.Status.Quiet() || r.StandsOn == r.ID {
		return delivery.Row{}, false, fmt.Errorf("ensure delivery %s standing on %s as %s: not a quiet settlement", r.ID, r.StandsOn, r.Status)
	}
	m, err := s.putMessage(ctx, r.ID, r.Message)
	if err != nil {
		return delivery.Row{}, false, err
	}
	r.Message = m
	put := types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(delivery_id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}
	stand, err := s.standOn(r.StandsOn, r.ID, r.Status)
	if err != nil {
		return delivery.Row{}, false, err
	}
	reasons, err := s.transact(ctx, "ensure delivery "+r.ID, []types.TransactWriteItem{put, stand})
	switch {
	case err != nil:
		return delivery.Row{}, false, err
	case refused(reasons, 0):
		old, err := s.rowOf(ctx, reasons[0].Item)
		if err != nil {
			return delivery.Row{}, false, err
		}
		return old, false, nil
	case reasons != nil:
		return delivery.Row{}, false, fmt.Errorf("ensure delivery %s on %s: %w", r.ID, r.StandsOn, store.ErrNotReached)
	}
	return r, true, nil
}

// Revive returns a row settled quietly on row on (Row.StandsOn) to
// pending, naming on as where it was revived from (RevivedFrom), after a verdict undid on (a Reject, a bounce: R-QUIET-4): the
// settlement rested on content the recipient never got. The row was
// never sent (a quiet settlement is taken only of a row with no sign of a
// send), so the notifier's run that follows decides it afresh and, if it
// mails it, through the claim, the send and the mark: once. It applies
// only to a row still settled quietly on on; ErrConflict otherwise
// (already revived, or never stood on it). The row keeps its own
// dependents: they stood on it, and are revived in turn.
func (s *Deliveries) Revive(ctx context.Context, id, on string) (delivery.Row, error) {
	upd := remove(setStatus(delivery.StatusPending).
		Set(expression.Name(attrRevivedFrom), expression.Value(on)).
		Set(expression.Name(attrUpdatedAt), expression.Value(ts(s.now()))),
		attrSkipReason, attrStandsOn)
	cond := statusIn(delivery.QuietStatuses()).And(expression.Name(attrStandsOn).Equal(expression.Value(on)))
	return s.updateReturn(ctx, id, upd, cond)
}

// expiresItem sets a new row's TTL attribute.
func (s *Deliveries) expiresItem(item map[string]types.AttributeValue) {
	if exp := expiresAt(s.now(), s.Retention); exp != 0 {
		item[attrExpiresAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(exp, 10)}
	}
}
