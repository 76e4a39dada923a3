package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
)

// putMessage writes row id's message item once (deliveries_codec.go):
// only where none exists, so a retry that rendered again never overwrites
// the message a row may already stand on. It returns the message as
// stored: m, or the one written before (ALL_OLD, no second read).
func (s *DynamoDeliveries) putMessage(ctx context.Context, id string, m delivery.Message) (delivery.Message, error) {
	item, err := marshalMessage(id, m)
	if err != nil {
		return delivery.Message{}, err
	}
	if exp := expiresAt(s.now(), s.Retention); exp != 0 {
		item[attrExpiresAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(exp+messageGrace, 10)}
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(" + attrDeliveryID + ")"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return m, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && len(ccf.Item) > 0 {
		return messageOf(id, ccf.Item)
	}
	return delivery.Message{}, fmt.Errorf("put delivery %s message: %w", id, err)
}

// rowOf reads a row from its item and, when the message is apart, its
// message item (strongly consistent: one read unit).
func (s *DynamoDeliveries) rowOf(ctx context.Context, item map[string]types.AttributeValue) (delivery.Row, error) {
	var r delivery.Row
	apart, err := unmarshalRow(item, &r)
	if err != nil || !apart {
		return r, err
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: messageKey(r.ID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return delivery.Row{}, fmt.Errorf("get delivery %s message: %w", r.ID, err)
	}
	r.Message, err = messageOf(r.ID, out.Item)
	return r, err
}

// rowsOf reads rows from their items, and the messages kept apart in
// one batch (batchGet), in the items' order.
func (s *DynamoDeliveries) rowsOf(ctx context.Context, items []map[string]types.AttributeValue) ([]delivery.Row, error) {
	rows := make([]delivery.Row, len(items))
	at := map[string]int{}
	var keys []map[string]types.AttributeValue
	for i, item := range items {
		apart, err := unmarshalRow(item, &rows[i])
		if err != nil {
			return nil, err
		}
		if apart {
			at[rows[i].ID+messageSuffix] = i
			keys = append(keys, messageKey(rows[i].ID))
		}
	}
	err := batchGet(ctx, s.db, s.table, keys, func(item map[string]types.AttributeValue) error {
		k, _ := item[attrDeliveryID].(*types.AttributeValueMemberS)
		if k == nil {
			return nil
		}
		i, ok := at[k.Value]
		if !ok {
			return nil
		}
		m, err := messageOf(rows[i].ID, item)
		rows[i].Message = m
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get delivery messages: %w", err)
	}
	return rows, nil
}
