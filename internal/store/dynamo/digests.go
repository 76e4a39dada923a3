package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

var _ store.Digests = (*Deliveries)(nil)

// sweepDigest is the live index's partition of digests that await their
// close or their first claim (index.go): created there, they leave it
// when claimed (Claim puts them under "row") or settled at their close.
// DueDigests reads its keys only, and tells the due ones by the time
// their id starts with (delivery.DigestID).
const sweepDigest = "digest"

// SettleDigested implements Digests.
func (s *Deliveries) SettleDigested(ctx context.Context, id string, d delivery.Row) (delivery.Row, error) {
	upd := setStatus(delivery.StatusDigested).
		Set(expression.Name(attrDigest), expression.Value(d.ID)).
		Set(expression.Name(attrPeriod), expression.Value(d.Period)).
		Set(expression.Name(attrSkipReason), expression.Value(delivery.DigestReason(d.Period))).
		Set(expression.Name(attrUpdatedAt), expression.Value(ts(s.now())))
	row, err := s.updateReturn(ctx, id, upd, claimableStatus().And(neverSent()))
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool {
		return r.Status == delivery.StatusDigested && r.Digest == d.ID
	})
}

// MoveDigested implements Digests.
func (s *Deliveries) MoveDigested(ctx context.Context, id, from string, to delivery.Row) (delivery.Row, error) {
	upd := expression.Set(expression.Name(attrDigest), expression.Value(to.ID)).
		Set(expression.Name(attrPeriod), expression.Value(to.Period)).
		Set(expression.Name(attrSkipReason), expression.Value(delivery.DigestReason(to.Period))).
		Set(expression.Name(attrUpdatedAt), expression.Value(ts(s.now())))
	cond := statusIs(delivery.StatusDigested).And(expression.Name(attrDigest).Equal(expression.Value(from)))
	row, err := s.updateReturn(ctx, id, upd, cond)
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool {
		return r.Status == delivery.StatusDigested && r.Digest == to.ID
	})
}

// AddToDigest implements Digests: one UpdateItem that creates the row or
// ADDs entry to its string set (a repeat adds nothing), conditional on
// the row being new, or open with room or entry in it.
func (s *Deliveries) AddToDigest(ctx context.Context, d delivery.Row, entry string, max int) (delivery.Row, error) {
	now := s.now().UTC()
	ifNew := func(attr string, v any) expression.OperandBuilder {
		return expression.IfNotExists(expression.Name(attr), expression.Value(v))
	}
	upd := setStatus(delivery.StatusOpen).
		Set(expression.Name(attrRecipient), ifNew(attrRecipient, delivery.NormalizeRecipient(d.Recipient))).
		Set(expression.Name(attrPeriod), ifNew(attrPeriod, d.Period)).
		Set(expression.Name(attrDueAt), ifNew(attrDueAt, ts(d.DueAt))).
		Set(expression.Name(attrAttempts), ifNew(attrAttempts, 0)).
		Set(expression.Name(attrCreatedAt), ifNew(attrCreatedAt, ts(now))).
		Set(expression.Name(attrUpdatedAt), expression.Value(ts(now))).
		Set(expression.Name(schema.Sweep), expression.Value(sweepDigest)).
		Add(expression.Name(attrEntries), expression.Value(&types.AttributeValueMemberSS{Value: []string{entry}}))
	if exp := expiresAt(now, s.Retention); exp != 0 {
		upd = upd.Set(expression.Name(attrExpiresAt), expression.IfNotExists(expression.Name(attrExpiresAt),
			expression.Value(&types.AttributeValueMemberN{Value: strconv.FormatInt(exp, 10)})))
	}
	entries := expression.Name(attrEntries)
	cond := expression.AttributeNotExists(expression.Name(attrDeliveryID)).
		Or(statusIs(delivery.StatusOpen).And(entries.Size().LessThan(expression.Value(max)).Or(expression.Contains(entries, entry))))
	row, err := s.updateReturn(ctx, d.ID, upd, cond)
	return s.ours(ctx, d.ID, row, err, func(r delivery.Row) bool { return r.HasEntry(entry) })
}

// CloseDigest implements Digests. The message is kept gzipped, as Ensure
// keeps a version's (R-COST-5); a digest closed pending stays in the
// digests' partition of the live index until its claim.
func (s *Deliveries) CloseDigest(ctx context.Context, id string, entries int, c store.DigestClose) (delivery.Row, error) {
	upd := setStatus(c.Status).Set(expression.Name(attrUpdatedAt), expression.Value(ts(s.now())))
	if c.Status == delivery.StatusPending {
		gz, err := gzipMessage(c.Message)
		if err != nil {
			return delivery.Row{}, fmt.Errorf("digest %s: %w", id, err)
		}
		upd = upd.Set(expression.Name(attrMessageGz), expression.Value(&types.AttributeValueMemberB{Value: gz}))
	} else {
		upd = sweepRowOut(upd.Set(expression.Name(attrSkipReason), expression.Value(c.Reason)))
	}
	cond := statusIs(delivery.StatusOpen).And(expression.Name(attrEntries).Size().Equal(expression.Value(entries)))
	row, err := s.updateReturn(ctx, id, upd, cond)
	return s.ours(ctx, id, row, err, func(r delivery.Row) bool { return closedAs(r, c) })
}

// closedAs reports whether a digest row shows close c applied.
func closedAs(r delivery.Row, c store.DigestClose) bool {
	if r.Status == delivery.StatusPending {
		return c.Status == delivery.StatusPending && r.Message.ContentSHA256 == c.Message.ContentSHA256
	}
	return r.Status == c.Status && r.SkipReason == c.Reason
}

// DueDigests implements Digests. It queries the digests' partition of
// the live index (keys only: about a hundred keys per read unit, however
// many digests are open), keeps the keys whose due time has come, reads
// those rows whole (batchGet) and hands each that still awaits its close
// or first claim to fn. A row found in the partition that awaits neither
// (settled some other way) is taken out of it, so it is not read again.
func (s *Deliveries) DueDigests(ctx context.Context, dueBy time.Time, fn func(delivery.Row) error) error {
	e, err := expression.NewBuilder().WithKeyCondition(expression.Key(schema.Sweep).Equal(expression.Value(sweepDigest))).Build()
	if err != nil {
		return fmt.Errorf("build due digests query: %w", err)
	}
	var keys []map[string]types.AttributeValue
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{TableName: &s.table, IndexName: aws.String(schema.IndexLiveDeliveries),
		KeyConditionExpression: e.KeyCondition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("query due digests: %w", err)
		}
		for _, item := range out.Items {
			k, ok := item[attrDeliveryID].(*types.AttributeValueMemberS)
			if !ok {
				continue
			}
			if due, ok := delivery.DigestDue(k.Value); ok && !due.After(dueBy) {
				keys = append(keys, map[string]types.AttributeValue{attrDeliveryID: k})
			}
		}
	}
	var items []map[string]types.AttributeValue
	if err := batchGet(ctx, s.db, s.table, keys, func(item map[string]types.AttributeValue) error {
		items = append(items, item)
		return nil
	}); err != nil {
		return fmt.Errorf("read due digests: %w", err)
	}
	rows, err := s.rowsOf(ctx, items)
	if err != nil {
		return fmt.Errorf("read due digests: %w", err)
	}
	slices.SortFunc(rows, func(a, b delivery.Row) int { return strings.Compare(a.ID, b.ID) })
	for _, r := range rows {
		if !r.AwaitsClose() {
			s.retireDigest(ctx, r.ID)
			continue
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// retireDigest takes a digest row that awaits neither its close nor its
// first claim out of the digests' partition. Best effort: a failure only
// has the next sweep read it again.
func (s *Deliveries) retireDigest(ctx context.Context, id string) {
	cond := expression.Name(schema.Sweep).Equal(expression.Value(sweepDigest)).
		And(expression.Not(statusIn([]delivery.Status{delivery.StatusOpen, delivery.StatusPending, delivery.StatusFailedTransient})))
	_, _ = s.updateReturn(ctx, id, sweepRowOut(expression.Set(expression.Name(attrUpdatedAt), expression.Value(ts(s.now())))), cond)
}
