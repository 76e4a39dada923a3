package dynamo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/testenv"
)

// readCounter sums the items DynamoDB read to answer: the ScannedCount of
// every Scan and Query answer, and the items of every GetItem and
// BatchGetItem answer (what a read is billed by).
type readCounter struct {
	next    http.RoundTripper
	scanned atomic.Int64
}

// peekAnswer reads a successful answer's body for a test transport and
// puts it back for the SDK: nil for a failed call or an error answer.
func peekAnswer(resp *http.Response, err error) ([]byte, error) {
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}

func (c *readCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	b, perr := peekAnswer(resp, err)
	if b == nil {
		return resp, perr
	}
	var out struct {
		ScannedCount int64
		Item         json.RawMessage
		Responses    map[string][]json.RawMessage
	}
	if json.Unmarshal(b, &out) == nil {
		c.scanned.Add(out.ScannedCount)
		if len(out.Item) > 0 {
			c.scanned.Add(1)
		}
		for _, items := range out.Responses {
			c.scanned.Add(int64(len(items)))
		}
	}
	return resp, nil
}

// A sweep's queries read the live work, not the history: with 120 finished
// jobs and 120 confirmed rows beside 2 stuck jobs and 2 unsettled rows,
// StuckJobs and Unsettled read (and bill) the 4 live items' index keys and
// then the 4 items: twice the live work, whatever the history.
// Rules: R-COST-1.
func TestSweepQueries_ReadLiveWorkNotHistory(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	counter := &readCounter{next: http.DefaultTransport}
	cfg := env.Clients.Config.Copy()
	cfg.HTTPClient = &http.Client{Transport: counter}
	db := dynamo.NewClient(cfg, env.Endpoints.DynamoDB)
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	jobs := dynamo.NewJobs(db, res.JobsTable, clock)
	rows := dynamo.NewDeliveries(db, res.DeliveriesTable, clock)
	ctx := context.Background()
	const history, live = 120, 2
	for i := range history + live {
		j := storetest.NewJob(fmt.Sprintf("cl-%d", i), 1)
		storetest.Create(t, jobs, j, fmt.Sprintf("k-%d", i), "b")
		if i < history {
			if err := jobs.Advance(ctx, j.ID, job.StageFetch, 1, job.StatusSucceeded, store.JobWrite{}); err != nil {
				t.Fatal(err)
			}
		}
		id := fmt.Sprintf("d_%d", i)
		if _, _, err := rows.Ensure(ctx, storetest.NewRow(id)); err != nil {
			t.Fatal(err)
		}
		if _, err := rows.Claim(ctx, id, "t", time.Minute); err != nil {
			t.Fatal(err)
		}
		if i < history {
			if _, err := rows.MarkSent(ctx, id, "t", "ses-"+id); err != nil {
				t.Fatal(err)
			}
			if _, _, err := rows.RecordEvent(ctx, id, store.Event{Type: "Delivery", MessageID: "ses-" + id, At: now}); err != nil {
				t.Fatal(err)
			}
		}
	}
	counter.scanned.Store(0)
	stuck, unsettled := 0, 0
	if err := jobs.StuckJobs(ctx, now.Add(time.Hour), func(job.Job) error { stuck++; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := rows.Unsettled(ctx, now.Add(time.Hour), func(delivery.Row) error { unsettled++; return nil }); err != nil {
		t.Fatal(err)
	}
	read := counter.scanned.Load()
	t.Logf("sweep read %d items for %d live (table history: %d jobs, %d rows)", read, stuck+unsettled, history+live, history+live)
	if stuck != live || unsettled != live {
		t.Fatalf("found %d stuck jobs, %d unsettled rows; want %d each", stuck, unsettled, live)
	}
	if read > 2*(2*live)+2 {
		t.Errorf("the sweep read %d items for %d live ones: it reads the history", read, 2*live)
	}
	// What a sweep by Scan, as before the index, reads: every item.
	counter.scanned.Store(0)
	for _, table := range []string{res.JobsTable, res.DeliveriesTable} {
		p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table)})
		for p.HasMorePages() {
			if _, err := p.NextPage(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("a Scan of both tables reads %d items", counter.scanned.Load())
}
