package dynamo

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
)

// The rendered message is most of a row (an 8–10 KB critique email against
// a few hundred bytes of state). It is stored gzipped, as one binary
// attribute, in an item of its own (below; R-COST-5): the row's writes
// bill for its state alone. The message reads back byte for byte
// (R-OUTBOX-2); rows written before hold it inline, gzipped or as the map
// attribute "message", and still read.
const (
	attrMessage   = "message"
	attrMessageGz = "message_gz"
)

// storedMessage is a message's gzipped JSON form. Its keys are the
// attribute names the map form used, fixed here: renaming a field of
// delivery.Message must not change what stored rows mean.
type storedMessage struct {
	Subject         string `json:"subject"`
	HTML            string `json:"html"`
	Text            string `json:"text"`
	TemplateVersion string `json:"template_version"`
	ContentSHA256   string `json:"content_sha256"`
	UnsubscribeURL  string `json:"unsubscribe_url,omitempty"`
	Thread          string `json:"thread,omitempty"`
	ListID          string `json:"list_id,omitempty"`
	Reason          string `json:"reason,omitempty"`
	Severity        string `json:"severity,omitempty"`
	Findings        string `json:"findings,omitempty"`
	ReplyTo         string `json:"reply_to,omitempty"`
}

// A row's state and its message are two items (R-COST-5). The state
// changes with every claim, mark and provider event and stays well under
// 1 KB; the message (a few KB even gzipped) is rendered once. DynamoDB
// bills each write of an item by the whole item's size, so a row whose
// message rode along billed every status change for the message again
// (about 3 KB of a 3.4 KB row). Today's layout keeps the message in a
// sibling item of the same table, keyed by the row's id and
// messageSuffix, written once before the row exists (Ensure), never
// overwritten, and read back beside the row. A sibling item rather than
// an S3 object: the functions that read rows already hold the table's
// grants, a strongly consistent read of it costs one read unit, and it
// expires by the table's TTL with no second retention to keep in step.
// It carries no status and no live-index key, so no sweep or index sees
// it.
//
// Rows written before (the message inline, gzipped as message_gz or as
// the map "message") still read and settle: unmarshalRow takes the
// message from the row itself when it is there, and the writes that
// follow leave it in place.
const (
	// messageSuffix makes a message item's key from its row's id.
	messageSuffix = "#message"
	// attrMessageItem marks a row whose message is in its message item.
	attrMessageItem = "message_item"
	// messageGrace keeps a message item a day past its row's TTL, so a
	// row never outlives its message (TTL deletes lazily, in any order).
	messageGrace = 24 * 60 * 60
)

// messageKey is the key of row id's message item.
func messageKey(id string) map[string]types.AttributeValue {
	return deliveryKey(id + messageSuffix)
}

// marshalRow is a row's item without its message, marked as having its
// message apart (marshalMessage).
func marshalRow(r delivery.Row) (map[string]types.AttributeValue, error) {
	item, err := marshal(stored[rowRecord](r))
	if err != nil {
		return nil, err
	}
	delete(item, attrMessage)
	item[attrMessageItem] = &types.AttributeValueMemberBOOL{Value: true}
	return item, nil
}

// marshalMessage is the message item of row id: the message gzipped.
func marshalMessage(id string, m delivery.Message) (map[string]types.AttributeValue, error) {
	gz, err := gzipMessage(m)
	if err != nil {
		return nil, fmt.Errorf("delivery %s: %w", id, err)
	}
	item := messageKey(id)
	item[attrMessageGz] = &types.AttributeValueMemberB{Value: gz}
	return item, nil
}

// gzipMessage is a message's stored form: its JSON, gzipped.
func gzipMessage(m delivery.Message) ([]byte, error) {
	raw, err := json.Marshal(storedMessage{Subject: m.Subject, HTML: m.HTML, Text: m.Text, TemplateVersion: m.TemplateVersion,
		ContentSHA256: m.ContentSHA256, UnsubscribeURL: m.UnsubscribeURL,
		Thread: m.Thread, ListID: m.ListID, Reason: m.Reason, Severity: m.Severity, Findings: m.Findings, ReplyTo: m.ReplyTo})
	if err != nil {
		return nil, fmt.Errorf("marshal message: %w", err)
	}
	var z bytes.Buffer
	zw, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("compress message: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress message: %w", err)
	}
	return z.Bytes(), nil
}

// unmarshalRow reads a row's item: its message too when the item holds
// it (rows written before, or a digest's, closed with its message).
// apart reports that the message is in the row's message item instead
// (messageOf).
func unmarshalRow(item map[string]types.AttributeValue, r *delivery.Row) (apart bool, err error) {
	rec := stored[rowRecord](*r)
	if err := unmarshal(item, &rec); err != nil {
		return false, err
	}
	*r = stored[delivery.Row](rec)
	if m, ok := item[attrMessageItem].(*types.AttributeValueMemberBOOL); ok && m.Value {
		return true, nil
	}
	gz, ok := item[attrMessageGz].(*types.AttributeValueMemberB)
	if !ok {
		return false, nil
	}
	r.Message, err = gunzipMessage(r.ID, gz.Value)
	return false, err
}

// messageOf reads a message item's message; an item without one (none
// found) is the zero message.
func messageOf(id string, item map[string]types.AttributeValue) (delivery.Message, error) {
	gz, ok := item[attrMessageGz].(*types.AttributeValueMemberB)
	if !ok {
		return delivery.Message{}, nil
	}
	return gunzipMessage(id, gz.Value)
}

// gunzipMessage reads a message's stored form (gzipMessage).
func gunzipMessage(id string, gz []byte) (delivery.Message, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return delivery.Message{}, fmt.Errorf("delivery %s message: %w", id, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return delivery.Message{}, fmt.Errorf("delivery %s message: %w", id, err)
	}
	var m storedMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return delivery.Message{}, fmt.Errorf("delivery %s message: %w", id, err)
	}
	return delivery.Message{Subject: m.Subject, HTML: m.HTML, Text: m.Text, TemplateVersion: m.TemplateVersion,
		ContentSHA256: m.ContentSHA256, UnsubscribeURL: m.UnsubscribeURL,
		Thread: m.Thread, ListID: m.ListID, Reason: m.Reason, Severity: m.Severity, Findings: m.Findings, ReplyTo: m.ReplyTo}, nil
}
