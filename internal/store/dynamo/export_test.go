package dynamo

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
)

// InlineRowItem is r's item in the layout rows had before their message
// moved to an item of its own: the message gzipped inside the row
// (message_gz). Tests write it to prove such rows still read and settle.
func InlineRowItem(r delivery.Row) (map[string]types.AttributeValue, error) {
	item, err := marshal(stored[rowRecord](r))
	if err != nil {
		return nil, err
	}
	gz, err := gzipMessage(r.Message)
	if err != nil {
		return nil, err
	}
	delete(item, attrMessage)
	item[attrMessageGz] = &types.AttributeValueMemberB{Value: gz}
	return item, nil
}

// RowRecord is r as the driver stores it: the attribute names of the
// deployed tables, for a test that writes a row's item in a layout the
// driver no longer writes.
func RowRecord(r delivery.Row) any { return stored[rowRecord](r) }
