package main

import (
	"context"
	"errors"
	"math"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// ruleMeter prices each DynamoDB write by AWS's published rules, apart
// from what DynamoDB Local reports (which the cost table prices): a
// standard write bills one unit per started KB of the larger of the
// item before and after it; a write that fails its condition the item as
// it is (at least one unit); a transaction twice its items' units
// (ConditionCheck items too); and each global secondary index the write
// touches one write per started KB of the index entry (keys, the
// projected attributes and 100 bytes): putting an item in, taking it out,
// or — when the index key changes — both; a keys-only index is not
// written when only unprojected attributes change. The index writes of a
// transaction are priced as standard writes (DynamoDB propagates them
// asynchronously). It reads each item the write names before and after,
// through a client the counter does not see; the bench runs reviews one
// after another, so no other writer comes between the reads and the write.
// No library prices DynamoDB writes; these rules are short enough to
// keep here.
type ruleMeter struct {
	db     *dynamodb.Client
	tables map[string]schema.Table
}

// ruleItem is one item a write names: its table, key, and whether the
// write is part of a transaction.
type ruleItem struct {
	table string
	key   map[string]ddbtypes.AttributeValue
	tx    bool
	check bool // a transaction's ConditionCheck: read, not written
	del   bool
}

// items is the list of items a write input names (nil for other inputs
// or tables it does not know).
func (r *ruleMeter) items(input any) []ruleItem {
	keyOf := func(table string, item map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
		t, ok := r.tables[table]
		if !ok || item[t.Key] == nil {
			return nil
		}
		return map[string]ddbtypes.AttributeValue{t.Key: item[t.Key]}
	}
	var out []ruleItem
	add := func(it ruleItem) {
		if _, ok := r.tables[it.table]; ok && it.key != nil {
			out = append(out, it)
		}
	}
	switch in := input.(type) {
	case *dynamodb.PutItemInput:
		t := aws.ToString(in.TableName)
		add(ruleItem{table: t, key: keyOf(t, in.Item)})
	case *dynamodb.UpdateItemInput:
		add(ruleItem{table: aws.ToString(in.TableName), key: in.Key})
	case *dynamodb.DeleteItemInput:
		add(ruleItem{table: aws.ToString(in.TableName), key: in.Key, del: true})
	case *dynamodb.TransactWriteItemsInput:
		for _, ti := range in.TransactItems {
			switch {
			case ti.Put != nil:
				t := aws.ToString(ti.Put.TableName)
				add(ruleItem{table: t, key: keyOf(t, ti.Put.Item), tx: true})
			case ti.Update != nil:
				add(ruleItem{table: aws.ToString(ti.Update.TableName), key: ti.Update.Key, tx: true})
			case ti.Delete != nil:
				add(ruleItem{table: aws.ToString(ti.Delete.TableName), key: ti.Delete.Key, tx: true, del: true})
			case ti.ConditionCheck != nil:
				add(ruleItem{table: aws.ToString(ti.ConditionCheck.TableName), key: ti.ConditionCheck.Key, tx: true, check: true})
			}
		}
	case *dynamodb.BatchWriteItemInput:
		for t, reqs := range in.RequestItems {
			for _, w := range reqs {
				switch {
				case w.PutRequest != nil:
					add(ruleItem{table: t, key: keyOf(t, w.PutRequest.Item)})
				case w.DeleteRequest != nil:
					add(ruleItem{table: t, key: w.DeleteRequest.Key, del: true})
				}
			}
		}
	}
	return out
}

// read returns each item as stored now (nil where none).
func (r *ruleMeter) read(ctx context.Context, its []ruleItem) []map[string]ddbtypes.AttributeValue {
	out := make([]map[string]ddbtypes.AttributeValue, len(its))
	for i, it := range its {
		got, err := r.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(it.table), Key: it.key, ConsistentRead: aws.Bool(true)})
		if err == nil {
			out[i] = got.Item
		}
	}
	return out
}

// units prices one write whose items were before and are after, err its
// answer: table units and, of those, index units.
func (r *ruleMeter) units(its []ruleItem, before, after []map[string]ddbtypes.AttributeValue, err error) (total, index float64) {
	var ccf *ddbtypes.ConditionalCheckFailedException
	var tce *ddbtypes.TransactionCanceledException
	failed := errors.As(err, &ccf) || errors.As(err, &tce)
	if err != nil && !failed {
		return 0, 0 // not applied, not billed as a write
	}
	for i, it := range its {
		mult := 1.0
		if it.tx {
			mult = 2
		}
		b, a := itemSize(before[i]), itemSize(after[i])
		switch {
		case failed || it.check:
			total += mult * kb(b)
			continue
		case it.del:
			total += mult * kb(b)
		default:
			total += mult * kb(max(a, b))
		}
		for _, idx := range r.tables[it.table].Indexes {
			n := indexWrites(r.tables[it.table].Key, idx, before[i], after[i])
			total += n
			index += n
		}
	}
	return total, index
}

// indexWrites is what one write of an item costs index idx.
func indexWrites(tableKey string, idx schema.Index, before, after map[string]ddbtypes.AttributeValue) float64 {
	in := func(item map[string]ddbtypes.AttributeValue) bool {
		return item != nil && item[idx.Hash] != nil && (idx.Range == "" || item[idx.Range] != nil)
	}
	entry := func(item map[string]ddbtypes.AttributeValue) float64 {
		if idx.All {
			return kb(itemSize(item) + 100)
		}
		keys := map[string]ddbtypes.AttributeValue{tableKey: item[tableKey], idx.Hash: item[idx.Hash]}
		if idx.Range != "" {
			keys[idx.Range] = item[idx.Range]
		}
		return kb(itemSize(keys) + 100)
	}
	inB, inA := in(before), in(after)
	switch {
	case !inB && !inA:
		return 0
	case inB && !inA:
		return entry(before)
	case !inB && inA:
		return entry(after)
	}
	sameKey := sameValue(before[idx.Hash], after[idx.Hash]) && (idx.Range == "" || sameValue(before[idx.Range], after[idx.Range]))
	switch {
	case !sameKey:
		return entry(before) + entry(after)
	case idx.All && itemSize(before) != itemSize(after):
		return entry(after)
	case idx.All && !sameItem(before, after):
		return entry(after)
	}
	return 0
}

func sameValue(a, b ddbtypes.AttributeValue) bool {
	return itemSize(map[string]ddbtypes.AttributeValue{"": a}) == itemSize(map[string]ddbtypes.AttributeValue{"": b}) &&
		scalar(a) == scalar(b)
}

// scalar is a string or number attribute's text (index keys are such).
func scalar(v ddbtypes.AttributeValue) string {
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return "S" + v.Value
	case *ddbtypes.AttributeValueMemberN:
		return "N" + v.Value
	case *ddbtypes.AttributeValueMemberB:
		return "B" + string(v.Value)
	}
	return ""
}

// sameItem compares two items' scalar attributes and sizes: enough to
// tell an all-attributes index entry changed.
func sameItem(a, b map[string]ddbtypes.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !sameValue(v, b[k]) {
			return false
		}
	}
	return true
}

// kb is the write units of n bytes: one per started KB, at least one.
func kb(n int) float64 { return max(1, math.Ceil(float64(n)/1024)) }
