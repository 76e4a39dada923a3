package main

import (
	"errors"
	"strings"
	"testing"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// The published rules, case by case: a standard write bills the larger of
// the item before and after per started KB; a transaction twice; a
// failed condition the item as it is; a keys-only index one write to put
// an item in or take it out, none when only other attributes change, two
// when its key changes.
func TestRuleMeter_PublishedRules(t *testing.T) {
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	row := func(size int, sweep string) map[string]ddbtypes.AttributeValue {
		item := map[string]ddbtypes.AttributeValue{"delivery_id": s("d1"), "pad": s(strings.Repeat("x", size))}
		if sweep != "" {
			item["sweep"] = s(sweep)
		}
		return item
	}
	tbl := map[string]schema.Table{"rows": schema.Deliveries()}
	r := &ruleMeter{tables: tbl}
	one := []ruleItem{{table: "rows", key: row(0, "")}}
	tx := []ruleItem{{table: "rows", key: row(0, ""), tx: true}}
	none := []map[string]ddbtypes.AttributeValue{nil}
	of := func(m map[string]ddbtypes.AttributeValue) []map[string]ddbtypes.AttributeValue {
		return []map[string]ddbtypes.AttributeValue{m}
	}
	ccf := &ddbtypes.ConditionalCheckFailedException{}
	for _, c := range []struct {
		name          string
		its           []ruleItem
		before, after []map[string]ddbtypes.AttributeValue
		err           error
		total, index  float64
	}{
		{"put of a 3.4 KB row into the index", one, none, of(row(3400, "row")), nil, 4 + 1, 1},
		{"update of a small row, index key unchanged", one, of(row(500, "row")), of(row(520, "row")), nil, 1, 0},
		{"update taking a small row out of the index", one, of(row(500, "row")), of(row(500, "")), nil, 1 + 1, 1},
		{"update changing the index key", one, of(row(500, "row")), of(row(500, "digest")), nil, 1 + 2, 2},
		{"a transaction's put of a small row", tx, none, of(row(500, "")), nil, 2, 0},
		{"a failed put over a 3 KB row", one, of(row(3000, "")), of(row(3000, "")), ccf, 3, 0},
		{"an error that is no write", one, none, none, errors.New("throttled"), 0, 0},
	} {
		total, index := r.units(c.its, c.before, c.after, c.err)
		if total != c.total || index != c.index {
			t.Errorf("%s: %.0f units (%.0f index), want %.0f (%.0f)", c.name, total, index, c.total, c.index)
		}
	}
}
