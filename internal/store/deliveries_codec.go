package store

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
// a few hundred bytes of state), and DynamoDB bills every write to an item
// by the item's size, in 1 KB units: the claim, the mark, each provider
// event and each status change, and the same again for the live index
// while the row is in it. So the row stores its message gzipped, as one
// binary attribute (R-COST-5): the writes that follow bill for about a
// quarter of the size. The message reads back byte for byte (R-OUTBOX-2);
// rows written before hold it as the map attribute "message" and still
// read.
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

// marshalRow is a row's item, its message gzipped.
func marshalRow(r delivery.Row) (map[string]types.AttributeValue, error) {
	item, err := marshal(r)
	if err != nil {
		return nil, err
	}
	gz, err := gzipMessage(r.Message)
	if err != nil {
		return nil, fmt.Errorf("delivery %s: %w", r.ID, err)
	}
	delete(item, attrMessage)
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

// unmarshalRow reads a row in either form: the message gzipped, or (rows
// written before) as a map.
func unmarshalRow(item map[string]types.AttributeValue, r *delivery.Row) error {
	if err := unmarshal(item, r); err != nil {
		return err
	}
	gz, ok := item[attrMessageGz].(*types.AttributeValueMemberB)
	if !ok {
		return nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.Value))
	if err != nil {
		return fmt.Errorf("delivery %s message: %w", r.ID, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return fmt.Errorf("delivery %s message: %w", r.ID, err)
	}
	var m storedMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("delivery %s message: %w", r.ID, err)
	}
	r.Message = delivery.Message{Subject: m.Subject, HTML: m.HTML, Text: m.Text, TemplateVersion: m.TemplateVersion,
		ContentSHA256: m.ContentSHA256, UnsubscribeURL: m.UnsubscribeURL,
		Thread: m.Thread, ListID: m.ListID, Reason: m.Reason, Severity: m.Severity, Findings: m.Findings, ReplyTo: m.ReplyTo}
	return nil
}
