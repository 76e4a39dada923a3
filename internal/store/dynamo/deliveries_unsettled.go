package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
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
	return eachLive(ctx, s.db, s.table, sweepRow, "unsettled deliveries", func(item map[string]types.AttributeValue) (delivery.Row, bool, error) {
		var r delivery.Row
		if _, err := unmarshalRow(item, &r); err != nil {
			return r, false, err
		}
		return r, r.Unsettled(sentBefore), nil
	}, fn)
}
