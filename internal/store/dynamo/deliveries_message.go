package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
)

// putMessage writes row id's message item once (deliveries_codec.go):
// only where none exists, so a retry that rendered again never overwrites
// the message a row may already stand on. It returns the message as
// stored: m, or the one written before (ALL_OLD, no second read).
func (s *Deliveries) putMessage(ctx context.Context, id string, m delivery.Message) (delivery.Message, error) {
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
		s.messages.put(id, m)
		return m, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && len(ccf.Item) > 0 {
		stored, err := messageOf(id, ccf.Item)
		if err == nil {
			s.messages.put(id, stored)
		}
		return stored, err
	}
	return delivery.Message{}, fmt.Errorf("put delivery %s message: %w", id, err)
}

// rowOf reads a row from its item and, when the message is apart, its
// message item (strongly consistent: one read unit).
func (s *Deliveries) rowOf(ctx context.Context, item map[string]types.AttributeValue) (delivery.Row, error) {
	var r delivery.Row
	apart, err := unmarshalRow(item, &r)
	if err != nil || !apart {
		return r, err
	}
	if m, ok := s.messages.get(r.ID); ok {
		r.Message = m
		return r, nil
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: messageKey(r.ID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return delivery.Row{}, fmt.Errorf("get delivery %s message: %w", r.ID, err)
	}
	r.Message, err = messageOf(r.ID, out.Item)
	if err == nil && len(out.Item) > 0 {
		s.messages.put(r.ID, r.Message)
	}
	return r, err
}

// rowsOf reads rows from their items, and the messages kept apart in
// one batch (batchGet), in the items' order.
func (s *Deliveries) rowsOf(ctx context.Context, items []map[string]types.AttributeValue) ([]delivery.Row, error) {
	rows := make([]delivery.Row, len(items))
	at := map[string]int{}
	var keys []map[string]types.AttributeValue
	for i, item := range items {
		apart, err := unmarshalRow(item, &rows[i])
		if err != nil {
			return nil, err
		}
		if !apart {
			continue
		}
		if m, ok := s.messages.get(rows[i].ID); ok {
			rows[i].Message = m
		} else {
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
		if err == nil {
			s.messages.put(rows[i].ID, m)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get delivery messages: %w", err)
	}
	return rows, nil
}

// messageCacheSize bounds the messages one instance keeps: a notify run's
// recipients, a feedback batch's rows (a few KB each).
const messageCacheSize = 256

// messageCache keeps message items this instance wrote or read, so the
// claim, the mark and the events that follow a row's Ensure return the
// row whole without reading its message again. A message item is written
// once and never overwritten (putMessage), so an entry is never stale.
// When full, an arbitrary entry goes: which one costs at most one read.
// A map and a mutex: an LRU library would buy an eviction order that
// correctness does not need.
type messageCache struct {
	mu  sync.Mutex
	max int
	m   map[string]delivery.Message
}

func newMessageCache(max int) *messageCache {
	return &messageCache{max: max, m: make(map[string]delivery.Message, max)}
}

func (c *messageCache) get(id string) (delivery.Message, bool) {
	if c == nil {
		return delivery.Message{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.m[id]
	return m, ok
}

func (c *messageCache) put(id string, m delivery.Message) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[id]; !ok && len(c.m) >= c.max {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[id] = m
}
