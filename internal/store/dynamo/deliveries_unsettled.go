package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Unsettled calls fn for every row that may need a hand from outside its
// notifier (delivery.Row.Unsettled). It reads the live index (index.go),
// not the table's history: the index holds the live rows' keys only, so
// the rows are then read whole, strongly consistent (batchGet), and each
// checked as it is now. Its rows come without their rendered message
// (kept in an item of its own, R-COST-5): the sweeper and the held
// deliveries' view act on a row's state, and notify reads the message
// when it claims the row. A sweep reads about twice the live rows,
// whatever the table holds (R-COST-1).
func (s *Deliveries) Unsettled(ctx context.Context, sentBefore time.Time, fn func(delivery.Row) error) error {
	e, err := expression.NewBuilder().WithKeyCondition(expression.Key(schema.Sweep).Equal(expression.Value(sweepRow))).Build()
	if err != nil {
		return fmt.Errorf("build unsettled query: %w", err)
	}
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{TableName: &s.table, IndexName: aws.String(schema.IndexLiveDeliveries),
		KeyConditionExpression: e.KeyCondition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("query unsettled deliveries: %w", err)
		}
		keys := make([]map[string]types.AttributeValue, 0, len(out.Items))
		for _, item := range out.Items {
			keys = append(keys, map[string]types.AttributeValue{attrDeliveryID: item[attrDeliveryID]})
		}
		var rows []delivery.Row
		if err := batchGet(ctx, s.db, s.table, keys, func(item map[string]types.AttributeValue) error {
			var r delivery.Row
			if _, err := unmarshalRow(item, &r); err != nil {
				return err
			}
			if r.Unsettled(sentBefore) {
				rows = append(rows, r)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("read unsettled deliveries: %w", err)
		}
		for _, r := range rows {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}
