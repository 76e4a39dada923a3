package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"

	"github.com/criticizer/criticizer/internal/cost"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// callKey names one kind of AWS call made under a tag (the function or
// request kind that made it).
type callKey struct {
	Tag, Service, Op string
}

// callCount is what was counted for one key: operation calls (one per
// client call, whatever the SDK retried underneath) and, for DynamoDB
// writes, the items a successful call wrote; then what the calls are
// billed by, as measured on each call.
type callCount struct {
	Calls, Items int64
	// MS is the time spent in the calls, in milliseconds.
	MS float64
	// ReadUnits and WriteUnits are the capacity DynamoDB reported
	// (ReturnConsumedCapacity INDEXES): table and global secondary
	// indexes; IndexWriteUnits is the indexes' share of WriteUnits.
	ReadUnits, WriteUnits, IndexWriteUnits float64
	// FailedWrites are conditional writes and transactions that failed:
	// DynamoDB bills them but reports no capacity in an error.
	FailedWrites int64
	// RuleWriteUnits and RuleIndexWriteUnits are the same writes priced
	// by AWS's published rules (ruleMeter), failed ones included; zero
	// where the counter was not asked to (PriceWrites).
	RuleWriteUnits, RuleIndexWriteUnits float64
	// Requests are SQS and SNS request units (one per started 64 KB of a
	// payload); Empty counts SQS receives that returned no message.
	Requests float64
	Empty    int64
	// Bytes: an SES message's content, an S3 object put.
	Bytes int64
	// Recipients an SES send was addressed to (SES bills each).
	Recipients int64
}

func (c *callCount) add(m callCount) {
	c.Calls += m.Calls
	c.Items += m.Items
	c.MS += m.MS
	c.ReadUnits += m.ReadUnits
	c.WriteUnits += m.WriteUnits
	c.IndexWriteUnits += m.IndexWriteUnits
	c.FailedWrites += m.FailedWrites
	c.RuleWriteUnits += m.RuleWriteUnits
	c.RuleIndexWriteUnits += m.RuleIndexWriteUnits
	c.Requests += m.Requests
	c.Empty += m.Empty
	c.Bytes += m.Bytes
	c.Recipients += m.Recipients
}

// Counter counts AWS SDK calls by tag, service and operation, as SDK
// middleware, the way internal/fault injects faults: every client built
// from the config it is installed on is counted. It also asks DynamoDB for
// the capacity each request consumed (ReturnConsumedCapacity INDEXES, so
// writes to the sparse indexes are counted: AWS bills them) and reads it
// from the answer.
type Counter struct {
	mu     sync.Mutex
	counts map[callKey]*callCount
	rules  *ruleMeter
}

// PriceWrites has the counter also price every DynamoDB write to tables
// by AWS's published rules (ruleMeter), reading items through db, a
// client the counter is not installed on.
func (c *Counter) PriceWrites(db *dynamodb.Client, tables map[string]schema.Table) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rules = &ruleMeter{db: db, tables: tables}
}

func (c *Counter) ruleMeter() *ruleMeter {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rules
}

func NewCounter() *Counter { return &Counter{counts: map[callKey]*callCount{}} }

type tagKey struct{}

// WithTag marks the calls made under ctx (a function, or a unique vs
// duplicate request) so the counter can attribute them.
func WithTag(ctx context.Context, tag string) context.Context {
	return context.WithValue(ctx, tagKey{}, tag)
}

func tagOf(ctx context.Context) string {
	if t, ok := ctx.Value(tagKey{}).(string); ok {
		return t
	}
	return ""
}

// Option installs the counter on an SDK config (awsclient.Option).
func (c *Counter) Option() func(*aws.Config) {
	return func(cfg *aws.Config) {
		cfg.APIOptions = append(cfg.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("criticizer-bench-count",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					in.Parameters = withConsumedCapacity(in.Parameters)
					rules := c.ruleMeter()
					var its []ruleItem
					var before []map[string]ddbtypes.AttributeValue
					if rules != nil {
						if its = rules.items(in.Parameters); len(its) > 0 {
							before = rules.read(ctx, its)
						}
					}
					t0 := time.Now()
					out, md, err := next.HandleInitialize(ctx, in)
					took := time.Since(t0)
					m := measure(in.Parameters, out.Result, err)
					if len(its) > 0 {
						m.RuleWriteUnits, m.RuleIndexWriteUnits = rules.units(its, before, rules.read(ctx, its), err)
					}
					m.Calls, m.MS = 1, float64(took.Microseconds())/1000
					if err == nil {
						m.Items = itemsWritten(in.Parameters)
					}
					c.add(callKey{Tag: tagOf(ctx), Service: awsmiddleware.GetServiceID(ctx), Op: awsmiddleware.GetOperationName(ctx)}, m)
					return out, md, err
				}), middleware.Before)
		})
	}
}

// quiet drops the SDK's own log lines (S3 notes every response from the
// emulator that carries no checksum), which would bury the table.
func quiet(cfg *aws.Config) { cfg.Logger = logging.Nop{} }

// withConsumedCapacity returns a copy of a DynamoDB input that asks for
// the consumed capacity, table and indexes; other inputs as they are. A
// copy, so the caller's input (a paginator's, say) is left alone.
func withConsumedCapacity(p any) any {
	const rcc = ddbtypes.ReturnConsumedCapacityIndexes
	switch in := p.(type) {
	case *dynamodb.GetItemInput:
		c := *in
		c.ReturnConsumedCapacity = rcc
		return &c
	case *dynamodb.PutItemInput:
		c := *in
		c.ReturnConsumedCapacity = rcc
		return &c
	case *dynamodb.UpdateItemInput:
		c := *in
		c.ReturnConsumedCapacity = rcc
		return &c
	case *dynamodb.DeleteItemInput:
		c := *in
		c.ReturnConsumedCapacity = rcc
		return &c
	case *dynamodb.QueryInput:
		c := *in
		c.ReturnConsumedCapacity = rcc
		return &c
	case *dynamodb.ScanInput:
		c := *in
		c.ReturnConsumedCapacity = rcc
		return &c
	case *dynamodb.BatchGetItemInput:
		c := *in
		c.ReturnConsumedCapacity = rcc
		return &c
	case *dynamodb.BatchWriteItemInput:
		c := *in
		c.ReturnConsumedCapacity = rcc
		return &c
	case *dynamodb.TransactWriteItemsInput:
		c := *in
		c.ReturnConsumedCapacity = rcc
		return &c
	case *dynamodb.TransactGetItemsInput:
		c := *in
		c.ReturnConsumedCapacity = rcc
		return &c
	}
	return p
}

// consumedOf is the capacity an answer reports.
func consumedOf(result any) []ddbtypes.ConsumedCapacity {
	one := func(c *ddbtypes.ConsumedCapacity) []ddbtypes.ConsumedCapacity {
		if c == nil {
			return nil
		}
		return []ddbtypes.ConsumedCapacity{*c}
	}
	switch out := result.(type) {
	case *dynamodb.GetItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.PutItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.ScanOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		return out.ConsumedCapacity
	case *dynamodb.BatchWriteItemOutput:
		return out.ConsumedCapacity
	case *dynamodb.TransactWriteItemsOutput:
		return out.ConsumedCapacity
	case *dynamodb.TransactGetItemsOutput:
		return out.ConsumedCapacity
	}
	return nil
}

// measure reads what one call is billed by from its input and answer.
func measure(input, result any, err error) callCount {
	var m callCount
	switch in := input.(type) {
	case *dynamodb.GetItemInput, *dynamodb.QueryInput, *dynamodb.ScanInput, *dynamodb.BatchGetItemInput, *dynamodb.TransactGetItemsInput:
		for _, c := range consumedOf(result) {
			m.ReadUnits += aws.ToFloat64(c.CapacityUnits)
		}
	case *dynamodb.PutItemInput, *dynamodb.UpdateItemInput, *dynamodb.DeleteItemInput, *dynamodb.BatchWriteItemInput, *dynamodb.TransactWriteItemsInput:
		var ccf *ddbtypes.ConditionalCheckFailedException
		var tce *ddbtypes.TransactionCanceledException
		if errors.As(err, &ccf) || errors.As(err, &tce) {
			m.FailedWrites = 1
		}
		for _, c := range consumedOf(result) {
			m.WriteUnits += aws.ToFloat64(c.CapacityUnits)
			for _, gsi := range c.GlobalSecondaryIndexes {
				m.IndexWriteUnits += aws.ToFloat64(gsi.CapacityUnits)
			}
		}
	case *sqs.SendMessageInput:
		m.Requests = cost.Chunks64K(len(aws.ToString(in.MessageBody)) + sqsAttrSize(in.MessageAttributes))
	case *sqs.SendMessageBatchInput:
		n := 0
		for _, e := range in.Entries {
			n += len(aws.ToString(e.MessageBody)) + sqsAttrSize(e.MessageAttributes)
		}
		m.Requests = cost.Chunks64K(n)
	case *sqs.ReceiveMessageInput:
		out, _ := result.(*sqs.ReceiveMessageOutput)
		if out == nil || len(out.Messages) == 0 {
			m.Empty = 1 // an idle poll: the event source mapping's fixed cost
			break
		}
		n := 0
		for _, msg := range out.Messages {
			n += len(aws.ToString(msg.Body)) + sqsAttrSize(msg.MessageAttributes)
		}
		m.Requests = cost.Chunks64K(n)
	case *sns.PublishInput:
		m.Requests = cost.Chunks64K(len(aws.ToString(in.Message)))
	case *s3.PutObjectInput:
		m.Bytes = aws.ToInt64(in.ContentLength)
	case *sesv2.SendEmailInput:
		if d := in.Destination; d != nil {
			m.Recipients = int64(len(d.ToAddresses) + len(d.CcAddresses) + len(d.BccAddresses))
		}
		m.Bytes = int64(emailSize(in))
	case *sqs.DeleteMessageInput, *sqs.DeleteMessageBatchInput, *sqs.ChangeMessageVisibilityInput, *sqs.ChangeMessageVisibilityBatchInput:
		m.Requests = 1
	}
	return m
}

func sqsAttrSize(attrs map[string]sqstypes.MessageAttributeValue) int {
	n := 0
	for k, v := range attrs {
		n += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	return n
}

// emailSize is the content of an SES send: subject, bodies, headers (a
// raw message's bytes as they are). The message SES builds adds its own
// headers and encodes the bodies (quoted-printable), so this is the floor
// of what leaves AWS.
func emailSize(in *sesv2.SendEmailInput) int {
	if in.Content == nil {
		return 0
	}
	if r := in.Content.Raw; r != nil {
		return len(r.Data)
	}
	s := in.Content.Simple
	if s == nil {
		return 0
	}
	n := 0
	if s.Subject != nil {
		n += len(aws.ToString(s.Subject.Data))
	}
	if b := s.Body; b != nil {
		if b.Html != nil {
			n += len(aws.ToString(b.Html.Data))
		}
		if b.Text != nil {
			n += len(aws.ToString(b.Text.Data))
		}
	}
	for _, h := range s.Headers {
		n += len(aws.ToString(h.Name)) + len(aws.ToString(h.Value)) + 4
	}
	return n
}

// itemsWritten is how many items a successful DynamoDB write call wrote.
func itemsWritten(input any) int64 {
	switch in := input.(type) {
	case *dynamodb.PutItemInput, *dynamodb.UpdateItemInput, *dynamodb.DeleteItemInput:
		return 1
	case *dynamodb.TransactWriteItemsInput:
		n := int64(0)
		for _, it := range in.TransactItems {
			if it.Put != nil || it.Update != nil || it.Delete != nil {
				n++
			}
		}
		return n
	case *dynamodb.BatchWriteItemInput:
		n := int64(0)
		for _, reqs := range in.RequestItems {
			n += int64(len(reqs))
		}
		return n
	}
	return 0
}

func (c *Counter) add(k callKey, m callCount) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc := c.counts[k]
	if cc == nil {
		cc = &callCount{}
		c.counts[k] = cc
	}
	cc.add(m)
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() map[callKey]callCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[callKey]callCount, len(c.counts))
	for k, v := range c.counts {
		out[k] = *v
	}
	return out
}

// Reset forgets every count.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = map[callKey]*callCount{}
}

// isDynamoWrite reports whether op writes DynamoDB items.
func isDynamoWrite(service, op string) bool {
	if service != "DynamoDB" {
		return false
	}
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem":
		return true
	}
	return false
}
