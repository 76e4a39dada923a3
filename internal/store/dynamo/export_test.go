package dynamo

import (
	"bytes"
	"compress/gzip"
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
)

// InlineRowItem is r's item in the layout rows had before their message
// moved to an item of its own: the message gzipped inside the row
// (message_gz). Tests write it to prove such rows still read and settle.
func InlineRowItem(r delivery.Row) (map[string]types.AttributeValue, error) {
	item, err := marshal(stored[rowRecord](r))
	if err != nil {
		return nil, err
	}
	gz, err := gzipMessageBefore(r.Message)
	if err != nil {
		return nil, err
	}
	delete(item, attrMessage)
	item[attrMessageGz] = &types.AttributeValueMemberB{Value: gz}
	return item, nil
}

// gzipMessageBefore is a message's stored form before the dictionaries
// (compact.go): its JSON, gzipped.
func gzipMessageBefore(m delivery.Message) ([]byte, error) {
	raw, err := json.Marshal(storedMessage{Subject: m.Subject, HTML: m.HTML, Text: m.Text, TemplateVersion: m.TemplateVersion,
		ContentSHA256: m.ContentSHA256, UnsubscribeURL: m.UnsubscribeURL,
		Thread: m.Thread, ListID: m.ListID, Reason: m.Reason, Severity: m.Severity, Findings: m.Findings, ReplyTo: m.ReplyTo})
	if err != nil {
		return nil, err
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return z.Bytes(), nil
}

// RowRecord is r as the driver stores it: the attribute names of the
// deployed tables, for a test that writes a row's item in a layout the
// driver no longer writes.
func RowRecord(r delivery.Row) any { return stored[rowRecord](r) }

// JobRecord is j as the driver stores it (job.Job's attributes), for a
// test that writes a job's item in a layout the driver no longer writes.
func JobRecord(j job.Job) any { return stored[jobRecord](j) }
