package dynamo

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// ItemSize is an item's size as DynamoDB counts it: attribute names and
// values in UTF-8 bytes, a number about one byte per two significant
// digits plus one, a list or map 3 bytes plus one per element plus its
// contents, a boolean or null one byte. The capacity a write is billed
// is the larger of the item before and after, in started kilobytes; the
// bench and the store's row-size tests read it here.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return numberSize(x.Value)
	case *types.AttributeValueMemberB:
		return len(x.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range x.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range x.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range x.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize: one byte per two significant digits, plus one.
func numberSize(s string) int {
	digits := 0
	lead := true
	for _, c := range s {
		if c < '0' || c > '9' {
			continue
		}
		if lead && c == '0' {
			continue
		}
		lead = false
		digits++
	}
	return (digits+1)/2 + 1
}
