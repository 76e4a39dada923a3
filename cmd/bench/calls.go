package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/cost"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// callsResult is what one recipient count consumed: every AWS call of
// every function, each invocation's duration, the bytes the functions
// logged and the items left in the tables.
type callsResult struct {
	Recipients, Jobs, Notifications int
	Snap                            map[callKey]callCount
	Inv                             map[string]invocations
	LogBytes, LogLines              map[string]int64
	Stored                          storage
}

// storage is what the run left in DynamoDB: item bytes (with DynamoDB's
// 100-byte overhead per item) times the days each item is kept (its TTL,
// expires_at), by key prefix.
type storage struct {
	GBMonths float64
	ByKind   map[string]storedKind
}

type storedKind struct {
	Items    int
	Bytes    int64
	GBMonths float64
	Kept     bool // no TTL: counted as kept for keptDays
}

// keptDays is how long an item without a TTL (a changelist head, the
// evidence watermark) is counted as stored: a year.
const keptDays = 365

// deployedLogLevel is the level the functions log at when deployed
// (LOG_LEVEL, the CDK context logLevel's default).
const deployedLogLevel = "info"

// runCalls runs jobs reviews with rcpts recipients each through the whole
// pipeline, one after another (each posted once the previous one's emails
// are delivered and their SES events recorded, as reviews arriving apart
// would run), with the SES event path on, and measures what each function
// consumed.
func runCalls(ctx context.Context, base config.Config, runID string, jobs, rcpts, pollers int, timeout time.Duration) (callsResult, error) {
	counter, m, logs := NewCounter(), newMeter(), newLogMeter(deployedLogLevel)
	ls, err := startLocal(ctx, base, fmt.Sprintf("bench-%s-calls%d", runID, rcpts), counter, pollers, logs.logger(), m)
	if err != nil {
		return callsResult{}, err
	}
	counter.PriceWrites(ls.plain.DynamoDB, map[string]schema.Table{ls.cfg.JobsTable: schema.Jobs(), ls.cfg.DeliveriesTable: schema.Deliveries()})
	stopped := false
	defer func() {
		if !stopped {
			ls.fns.Stop()
		}
	}()
	// SES's event publishing: Send and Delivery of each of this run's
	// emails, published to the stack's SNS topic by a client the counter
	// sees (tag "ses"), as SES publishes them (the stack's own bridge is
	// off: it would also publish every other run's mail in the store).
	counted, err := devstack.NewClients(ctx, ls.cfg.Endpoints, counter.Option(), quiet)
	if err != nil {
		return callsResult{}, err
	}
	var mu sync.Mutex
	ours := map[string]bool{}
	bridge := &devstack.SESEventBridge{Store: &devstack.SESEmulator{BaseURL: ls.cfg.SESStoreURL}, SNS: counted.SNS,
		TopicARN: ls.res.EventsTopicARN, ConfigurationSet: ls.cfg.ConfigurationSet, Interval: 100 * time.Millisecond,
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Deliver: func(ctx context.Context, evs []devstack.SESEvent, publish func(context.Context, devstack.SESEvent) error) error {
			for _, e := range evs {
				mu.Lock()
				mine := ours[e.DeliveryID]
				mu.Unlock()
				if !mine {
					continue
				}
				if err := publish(ctx, e); err != nil {
					return err
				}
			}
			return nil
		}}
	bctx, stopBridge := context.WithCancel(WithTag(ctx, "ses"))
	var bwg sync.WaitGroup
	bwg.Add(1)
	go func() { defer bwg.Done(); bridge.Run(bctx) }()
	defer func() { stopBridge(); bwg.Wait() }()

	prefix := fmt.Sprintf("calls%d-%s", rcpts, runID)
	for i := range jobs {
		cl := fmt.Sprintf("%s-%d", prefix, i)
		rs := recipientsN(rcpts)
		ck := job.ChangelistKey("generic", cl)
		mu.Lock()
		for _, r := range rs {
			ours[delivery.ID(ck, delivery.NormalizeRecipient(r), 1)] = true
		}
		mu.Unlock()
		ids, id, err := postOne(ctx, ls, cl, rcpts, []byte(base.WebhookSecret))
		if err != nil {
			return callsResult{}, err
		}
		if err := waitDone(ctx, ls, []job.ID{id}, timeout); err != nil {
			return callsResult{}, err
		}
		if err := waitDelivered(ctx, ls, ids, timeout); err != nil {
			return callsResult{}, err
		}
	}
	// Let the pollers delete the last batches (the event source mapping's
	// DeleteMessageBatch) before stopping them.
	time.Sleep(1500 * time.Millisecond)
	ls.fns.Stop()
	stopped = true
	stopBridge()
	bwg.Wait()
	res := callsResult{Recipients: rcpts, Jobs: jobs, Notifications: ls.sender.count(), Snap: counter.Snapshot(), Inv: m.snapshot()}
	res.LogBytes, res.LogLines = logs.snapshot()
	if res.Stored, err = measureStorage(ctx, ls.plain.DynamoDB, time.Now(), ls.cfg.JobsTable, ls.cfg.DeliveriesTable); err != nil {
		return res, err
	}
	return res, nil
}

// waitDelivered waits until each row has its provider's Delivery event
// recorded (the feedback function's last write for a row).
func waitDelivered(ctx context.Context, ls *localStack, ids []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		rows, err := ls.rows.GetMany(ctx, ids)
		done := err == nil && len(rows) == len(ids)
		for _, r := range rows {
			done = done && !r.DeliveredAt.IsZero()
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for the Delivery events of %d rows: %v", len(ids), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// measureStorage scans tables (uncounted: the bench's own reads) and
// sums what their items cost to keep: size × days until their TTL.
func measureStorage(ctx context.Context, db *dynamodb.Client, now time.Time, tables ...string) (storage, error) {
	st := storage{ByKind: map[string]storedKind{}}
	for _, table := range tables {
		p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return st, fmt.Errorf("scan %s: %w", table, err)
			}
			for _, item := range out.Items {
				size := itemSize(item) + 100
				days, kept := float64(keptDays), true
				if n, ok := item["expires_at"].(*ddbtypes.AttributeValueMemberN); ok {
					if exp, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
						days, kept = max(0, float64(exp-now.Unix())/86400), false
					}
				}
				kind := itemKind(item)
				k := st.ByKind[kind]
				k.Items++
				k.Bytes += int64(size)
				k.GBMonths += cost.GBMonths(float64(size), days)
				k.Kept = k.Kept || kept
				st.ByKind[kind] = k
				st.GBMonths += cost.GBMonths(float64(size), days)
			}
		}
	}
	return st, nil
}

// itemKind names an item by its key's prefix (store/keys.go), or
// "delivery row", or "delivery message" (a row's message item, R-COST-5).
func itemKind(item map[string]ddbtypes.AttributeValue) string {
	pk, ok := item["pk"].(*ddbtypes.AttributeValueMemberS)
	if !ok {
		if id, ok := item["delivery_id"].(*ddbtypes.AttributeValueMemberS); ok && strings.HasSuffix(id.Value, "#message") {
			return "delivery message"
		}
		return "delivery row"
	}
	for i, c := range pk.Value {
		if c == '#' {
			return pk.Value[:i+1]
		}
	}
	return pk.Value
}

// itemSize is an item's size as DynamoDB counts it (dynamo.ItemSize).
func itemSize(item map[string]ddbtypes.AttributeValue) int { return dynamo.ItemSize(item) }
