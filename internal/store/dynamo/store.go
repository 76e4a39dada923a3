// Package dynamo is the DynamoDB driver of package store's contracts: it
// keeps jobs with their idempotency records and changelist heads (jobs
// table), and the delivery rows (deliveries table). Every state change is
// one conditional write, so concurrent workers and duplicate messages
// cannot corrupt a row.
//
// Each driver type is named for the contract it implements (Jobs
// implements store.Jobs, built by NewJobs; Deliveries, by NewDeliveries;
// ...). Everything that knows DynamoDB's form stays here: the stored
// records and their codecs, the attribute names, the condition builders
// and, in package schema, the tables' keys and prefixes. Package store's
// callers never see an attribute; storetest proves this driver and
// memstore behave alike on DynamoDB Local (R-STORE-1).
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/criticizer/criticizer/internal/store"
)

// NewClient returns a DynamoDB client from the SDK config, at endpoint
// when set (DynamoDB Local, whose error responses carry no CRC32 header).
func NewClient(cfg aws.Config, endpoint string) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.DisableValidateResponseChecksum = true
		}
	})
}

// timeLayout is fixed-width UTC, so timestamps stored as strings compare
// chronologically in condition expressions (lease_until < now). The SDK's
// default, RFC3339Nano, trims trailing zeros and does not.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// ts formats t for storage and for comparisons in expressions.
func ts(t time.Time) string { return t.UTC().Format(timeLayout) }

// Timestamp formats t as stored, for comparisons in filter expressions.
func Timestamp(t time.Time) string { return ts(t) }

// zeroTime is how a zero time.Time encodes; optional timestamps that are zero
// are dropped so `attribute_not_exists` means "not set".
var zeroTime = ts(time.Time{})

// marshal encodes v with fixed-width timestamps and drops zero ones.
func marshal(v any) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMapWithOptions(v, func(o *attributevalue.EncoderOptions) {
		o.EncodeTime = func(t time.Time) (types.AttributeValue, error) { return str(ts(t)), nil }
	})
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", v, err)
	}
	for k, av := range item {
		if s, ok := av.(*types.AttributeValueMemberS); ok && s.Value == zeroTime {
			delete(item, k)
		}
	}
	return item, nil
}

func unmarshal(item map[string]types.AttributeValue, v any) error {
	if err := attributevalue.UnmarshalMap(item, v); err != nil {
		return fmt.Errorf("unmarshal %T: %w", v, err)
	}
	return nil
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// conditionalUpdate runs one UpdateItem guarded by cond. A failed condition
// is ErrConflict: the item is not in the state the caller read.
func conditionalUpdate(ctx context.Context, db *dynamodb.Client, table string, key map[string]types.AttributeValue,
	upd expression.UpdateBuilder, cond expression.ConditionBuilder, rv types.ReturnValue) (map[string]types.AttributeValue, error) {
	e, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("build update: %w", err)
	}
	out, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &table, Key: key,
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValues: rv,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil, store.ErrConflict
	}
	if err != nil {
		return nil, err
	}
	return out.Attributes, nil
}
