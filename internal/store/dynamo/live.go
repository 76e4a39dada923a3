package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// eachLive reads one partition of the live deliveries index (sweepRow
// for email rows, sweepPost for post rows), then each page's items whole,
// strongly consistent (batchGet), and calls fn, page by page, for the
// items decode keeps. The index holds the live items' keys only, so a
// sweep reads about twice the live items, whatever the table holds
// (R-COST-1). what names the items in errors.
func eachLive[T any](ctx context.Context, db *dynamodb.Client, table, partition, what string,
	decode func(map[string]types.AttributeValue) (T, bool, error), fn func(T) error) error {
	e, err := expression.NewBuilder().WithKeyCondition(expression.Key(schema.Sweep).Equal(expression.Value(partition))).Build()
	if err != nil {
		return fmt.Errorf("build %s query: %w", what, err)
	}
	p := dynamodb.NewQueryPaginator(db, &dynamodb.QueryInput{TableName: &table, IndexName: aws.String(schema.IndexLiveDeliveries),
		KeyConditionExpression: e.KeyCondition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("query %s: %w", what, err)
		}
		keys := make([]map[string]types.AttributeValue, 0, len(out.Items))
		for _, item := range out.Items {
			keys = append(keys, map[string]types.AttributeValue{attrDeliveryID: item[attrDeliveryID]})
		}
		var kept []T
		if err := batchGet(ctx, db, table, keys, func(item map[string]types.AttributeValue) error {
			v, keep, err := decode(item)
			if err != nil {
				return err
			}
			if keep {
				kept = append(kept, v)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("read %s: %w", what, err)
		}
		for _, v := range kept {
			if err := fn(v); err != nil {
				return err
			}
		}
	}
	return nil
}
