package main

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"
)

// callKey names one kind of AWS call made under a tag (the function or
// request kind that made it).
type callKey struct {
	Tag, Service, Op string
}

// callCount is what was counted for one key: operation calls (one per
// client call, whatever the SDK retried underneath) and, for DynamoDB
// writes, the items a successful call wrote.
type callCount struct {
	Calls, Items int64
	// MS is the time spent in the calls, in milliseconds.
	MS float64
}

// Counter counts AWS SDK calls by tag, service and operation, as SDK
// middleware, the way internal/fault injects faults: every client built
// from the config it is installed on is counted.
type Counter struct {
	mu     sync.Mutex
	counts map[callKey]*callCount
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
					t0 := time.Now()
					out, md, err := next.HandleInitialize(ctx, in)
					d := time.Since(t0)
					items := int64(0)
					if err == nil {
						items = itemsWritten(in.Parameters)
					}
					c.add(callKey{Tag: tagOf(ctx), Service: awsmiddleware.GetServiceID(ctx), Op: awsmiddleware.GetOperationName(ctx)}, items, d)
					return out, md, err
				}), middleware.Before)
		})
	}
}

// quiet drops the SDK's own log lines (S3 notes every response from the
// emulator that carries no checksum), which would bury the table.
func quiet(cfg *aws.Config) { cfg.Logger = logging.Nop{} }

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

func (c *Counter) add(k callKey, items int64, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc := c.counts[k]
	if cc == nil {
		cc = &callCount{}
		c.counts[k] = cc
	}
	cc.Calls++
	cc.Items += items
	cc.MS += float64(d.Microseconds()) / 1000
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
