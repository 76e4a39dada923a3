package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// batchGetMax is DynamoDB's BatchGetItem limit: 100 keys per call.
const batchGetMax = 100

// batchGet reads the items of keys from one table, strongly consistent,
// in calls of at most batchGetMax keys, and hands each item found to fn
// (missing items are not reported). Unprocessed keys — DynamoDB's answer
// to throttling inside a batch — are asked for again with a growing pause,
// as AWS asks, and give up after a few tries. The SDK has no helper for
// this (its paginators cover Query and Scan only).
func batchGet(ctx context.Context, db *dynamodb.Client, table string, keys []map[string]types.AttributeValue,
	fn func(map[string]types.AttributeValue) error) error {
	for len(keys) > 0 {
		n := min(len(keys), batchGetMax)
		pending := map[string]types.KeysAndAttributes{table: {Keys: keys[:n], ConsistentRead: aws.Bool(true)}}
		keys = keys[n:]
		for tries := 0; len(pending) > 0; tries++ {
			if tries > 0 {
				if tries > 8 {
					return fmt.Errorf("batch get %s: unprocessed keys after %d tries", table, tries)
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Duration(tries*tries) * 20 * time.Millisecond):
				}
			}
			res, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return fmt.Errorf("batch get %s: %w", table, err)
			}
			for _, item := range res.Responses[table] {
				if err := fn(item); err != nil {
					return err
				}
			}
			pending = res.UnprocessedKeys
		}
	}
	return nil
}
