package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// sweepOptions size the sweep benchmark (section 8).
type sweepOptions struct {
	skip                     bool
	jobs, rows, live, loader int
	repeat                   int
}

func (o *sweepOptions) flags() {
	flag.BoolVar(&o.skip, "skip-sweep", false, "skip the sweep benchmark (section 8)")
	flag.IntVar(&o.jobs, "sweep-jobs", 100000, "terminal jobs in the sweep benchmark's history")
	flag.IntVar(&o.rows, "sweep-rows", 300000, "terminal delivery rows in the sweep benchmark's history")
	flag.IntVar(&o.live, "sweep-live", 100, "live items in the sweep benchmark (half stuck jobs, half unsettled rows)")
	flag.IntVar(&o.loader, "sweep-loaders", 8, "concurrent BatchWriteItem writers loading the history")
	flag.IntVar(&o.repeat, "sweep-repeat", 3, "sweeps timed per method (the median is printed)")
}

// sweepRead is what one way of sweeping read.
type sweepRead struct {
	Scanned   int64   // items DynamoDB read (ScannedCount)
	Units     float64 // read units it reported
	Found     int     // live items handed to the sweep
	Took      time.Duration
	Calls     int
	StuckJobs int
}

type sweepResult struct {
	Jobs, Rows, Live   int
	JobBytes, RowBytes int // one history item's size
	Load               time.Duration
	Index, Scan        sweepRead
}

// runSweep loads a table history of finished jobs and confirmed rows with
// a few live ones, then times one sweep's reads both ways: the sparse
// indexes (store.Jobs.StuckJobs, store.Deliveries.Unsettled, what the
// sweeper runs) and a Scan of both tables with the same filters (what the
// sweeper did before the indexes, commit 65ae6a8^).
func runSweep(ctx context.Context, base config.Config, runID string, o sweepOptions, progress func(string, ...any)) (sweepResult, error) {
	res := sweepResult{Jobs: o.jobs, Rows: o.rows, Live: o.live}
	proxy, err := startCapacityProxy(base.Endpoints.DynamoDB)
	if err != nil {
		return res, err
	}
	defer proxy.close()
	plain, err := devstack.NewClients(ctx, base.Endpoints, quiet)
	if err != nil {
		return res, err
	}
	r, err := devstack.Provision(ctx, plain, "bench-"+runID+"-sweep")
	if err != nil {
		return res, err
	}
	db := plain.DynamoDB
	now := time.Now().UTC()
	clock := func() time.Time { return now }
	jobs := dynamo.NewJobs(db, r.JobsTable, clock)
	rows := dynamo.NewDeliveries(db, r.DeliveriesTable, clock)
	msg, err := (&mail.Renderer{}).Render(mail.Data{ChangelistID: "billing-1042", ReviewVersion: 1, Title: "Add refunds to invoices",
		URL: "https://review.example.com/c/billing/+/1042", Author: "ana", UnsubscribeURL: "https://criticizer.example.com/unsubscribe/tok",
		Critique: critic.Critique{Critic: "offline/v1", Summary: "Two debugging leftovers and a TODO.", Files: 1, Additions: 14,
			Findings: []critic.Finding{{File: "internal/billing/invoice.go", Line: 15, Severity: critic.SeverityInfo, Rule: "todo-added", Message: "A TODO was added."},
				{File: "internal/billing/invoice.go", Line: 19, Severity: critic.SeverityWarning, Rule: "debug-print", Message: "fmt.Println left in."}}}})
	if err != nil {
		return res, err
	}
	newJob := func(cl string) job.Job {
		return job.Job{ID: job.NewID("generic", cl, 1), Source: "generic", ChangelistID: cl, ReviewVersion: 1, Title: "Add refunds to invoices",
			URL: "https://review.example.com/c/billing/+/1042", Author: "ana", Recipients: []string{"reviewer1@example.com", "reviewer2@example.com", "reviewer3@example.com"},
			Status: job.StatusAccepted, Stage: job.StageFetch, Attempts: job.Attempts{}, CreatedAt: now, UpdatedAt: now}
	}
	create := func(j job.Job) error {
		_, err := jobs.Create(ctx, store.CreateRequest{Job: j, IdempotencyKeySHA: "k-" + string(j.ID), RequestSHA256: "b",
			ResponseStatus: 202, ResponseBody: []byte(`{"job_id":"` + string(j.ID) + `"}`), TTL: time.Hour})
		return err
	}
	newRow := func(id string) delivery.Row {
		return delivery.Row{ID: id, JobID: "j_x", ChangelistKey: "generic:billing-1042", Recipient: "reviewer1@example.com", ReviewVersion: 1,
			Status: delivery.StatusPending, Message: msg, CreatedAt: now, UpdatedAt: now}
	}
	// One finished job and one confirmed row, through the store as the
	// pipeline writes them: the templates of the history.
	tj := newJob("template")
	if err := create(tj); err != nil {
		return res, err
	}
	if err := jobs.Advance(ctx, tj.ID, job.StageFetch, 1, job.StatusSucceeded, store.JobWrite{}); err != nil {
		return res, err
	}
	if _, _, err := rows.Ensure(ctx, newRow("d_template")); err != nil {
		return res, err
	}
	if _, err := rows.Claim(ctx, "d_template", "t", time.Minute); err != nil {
		return res, err
	}
	if _, err := rows.MarkSent(ctx, "d_template", "t", "ses-template"); err != nil {
		return res, err
	}
	if _, _, err := rows.RecordEvent(ctx, "d_template", store.Event{Type: "Delivery", MessageID: "ses-template", At: now}); err != nil {
		return res, err
	}
	get := func(table string, key map[string]ddbtypes.AttributeValue) (map[string]ddbtypes.AttributeValue, error) {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil || len(out.Item) == 0 {
			return nil, fmt.Errorf("read the template: %v", err)
		}
		if _, live := out.Item["sweep"]; live {
			return nil, fmt.Errorf("the template item %v is still in the live index", key)
		}
		return out.Item, nil
	}
	jobItem, err := get(r.JobsTable, map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: schema.PrefixJob + string(tj.ID)}})
	if err != nil {
		return res, err
	}
	rowItem, err := get(r.DeliveriesTable, map[string]ddbtypes.AttributeValue{"delivery_id": &ddbtypes.AttributeValueMemberS{Value: "d_template"}})
	if err != nil {
		return res, err
	}
	res.JobBytes, res.RowBytes = itemSize(jobItem)+100, itemSize(rowItem)+100

	progress("sweep: loading %d jobs and %d rows with %d writers", o.jobs, o.rows, o.loader)
	t0 := time.Now()
	if err := load(ctx, db, o.loader, r.JobsTable, jobItem, "pk", func(i int) string { return fmt.Sprintf("%sj_hist_%07d", schema.PrefixJob, i) }, o.jobs); err != nil {
		return res, err
	}
	if err := load(ctx, db, o.loader, r.DeliveriesTable, rowItem, "delivery_id", func(i int) string { return fmt.Sprintf("d_hist_%07d", i) }, o.rows); err != nil {
		return res, err
	}
	res.Load = time.Since(t0)
	for i := range o.live / 2 {
		if err := create(newJob(fmt.Sprintf("live-%d", i))); err != nil {
			return res, err
		}
	}
	for i := range o.live - o.live/2 {
		id := fmt.Sprintf("d_live_%d", i)
		if _, _, err := rows.Ensure(ctx, newRow(id)); err != nil {
			return res, err
		}
		if _, err := rows.Claim(ctx, id, "t", time.Minute); err != nil {
			return res, err
		}
	}

	// The sweeps read through the capacity proxy: ScannedCount and read
	// units of every answer.
	cfg := plain.Config.Copy()
	pdb := dynamo.NewClient(cfg, proxy.URL)
	pjobs, prows := dynamo.NewJobs(pdb, r.JobsTable, clock), dynamo.NewDeliveries(pdb, r.DeliveriesTable, clock)
	before := now.Add(time.Hour)
	index := func() (sweepRead, error) {
		var s sweepRead
		err := pjobs.StuckJobs(ctx, before, func(job.Job) error { s.Found++; s.StuckJobs++; return nil })
		if err == nil {
			err = prows.Unsettled(ctx, before, func(delivery.Row) error { s.Found++; return nil })
		}
		return s, err
	}
	scan := func() (sweepRead, error) {
		var s sweepRead
		jf := expression.Name("kind").Equal(expression.Value("job")).
			And(statusIn(job.Unfinished())).And(expression.Name("updated_at").LessThan(expression.Value(stamp(before))))
		n, err := scanCount(ctx, pdb, r.JobsTable, jf)
		s.Found, s.StuckJobs = n, n
		if err != nil {
			return s, err
		}
		evidence := expression.AttributeNotExists(expression.Name("provider_message_id"))
		for _, a := range []string{"evidence_send_at", "evidence_delivery_at", "evidence_bounce_at", "evidence_complaint_at", "evidence_reject_at"} {
			evidence = evidence.And(expression.AttributeNotExists(expression.Name(a)))
		}
		df := statusIn(delivery.UnsettledStatuses()).
			Or(expression.Name("status").Equal(expression.Value(string(delivery.StatusSent))).
				And(expression.Name("notified_at").LessThan(expression.Value(stamp(before)))).And(evidence).
				And(expression.Or(expression.AttributeNotExists(expression.Name("resolution")),
					expression.Name("resolution").NotEqual(expression.Value(delivery.ResolvedSent)))))
		n, err = scanCount(ctx, pdb, r.DeliveriesTable, df)
		s.Found += n
		return s, err
	}
	for name, run := range map[string]func() (sweepRead, error){"index": index, "scan": scan} {
		progress("sweep: %s, %d times", name, o.repeat)
		var took []time.Duration
		var last sweepRead
		for range max(1, o.repeat) {
			proxy.take()
			t0 := time.Now()
			s, err := run()
			s.Took = time.Since(t0)
			if err != nil {
				return res, fmt.Errorf("sweep by %s: %w", name, err)
			}
			s.Units, s.Scanned, s.Calls = proxy.takeReads()
			took = append(took, s.Took)
			last = s
		}
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		last.Took = took[len(took)/2]
		if name == "index" {
			res.Index = last
		} else {
			res.Scan = last
		}
	}
	if res.Index.Found != o.live || res.Scan.Found != o.live {
		return res, fmt.Errorf("sweep found %d live items by the indexes and %d by a scan, want %d", res.Index.Found, res.Scan.Found, o.live)
	}
	return res, nil
}

// scanPage is the Scan's page size in items.
const scanPage = 1000

// stamp is a time as the store writes it (store.ts).
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

func statusIn[S ~string](set []S) expression.ConditionBuilder {
	vals := make([]expression.OperandBuilder, len(set))
	for i, s := range set {
		vals[i] = expression.Value(string(s))
	}
	return expression.Name("status").In(vals[0], vals[1:]...)
}

// scanCount scans a table with a filter (paginated, as the old sweep
// did) and counts what matched.
func scanCount(ctx context.Context, db *dynamodb.Client, table string, filter expression.ConditionBuilder) (int, error) {
	e, err := expression.NewBuilder().WithFilter(filter).Build()
	if err != nil {
		return 0, err
	}
	n := 0
	// Pages of scanPage items: DynamoDB Local runs out of its 512 MB heap
	// answering a 1 MB page of 300,000 rows. The items read are the same;
	// only the number of calls grows.
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table), FilterExpression: e.Filter(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(), Limit: aws.Int32(scanPage)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return n, fmt.Errorf("scan %s: %w", table, err)
		}
		n += len(out.Items)
	}
	return n, nil
}

// load writes n copies of item, keyed by key(i), with BatchWriteItem (25
// items a call, unprocessed items sent again) from workers writers.
func load(ctx context.Context, db *dynamodb.Client, workers int, table string, item map[string]ddbtypes.AttributeValue, keyAttr string, key func(int) string, n int) error {
	batches := make(chan [2]int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				reqs := make([]ddbtypes.WriteRequest, 0, b[1]-b[0])
				for i := b[0]; i < b[1]; i++ {
					it := make(map[string]ddbtypes.AttributeValue, len(item))
					for k, v := range item {
						it[k] = v
					}
					it[keyAttr] = &ddbtypes.AttributeValueMemberS{Value: key(i)}
					reqs = append(reqs, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: it}})
				}
				pending := map[string][]ddbtypes.WriteRequest{table: reqs}
				for len(pending[table]) > 0 {
					out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
					if err != nil {
						errs <- fmt.Errorf("load %s: %w", table, err)
						return
					}
					pending = out.UnprocessedItems
				}
			}
		}()
	}
	var err error
feed:
	for i := 0; i < n; i += 25 {
		select {
		case batches <- [2]int{i, min(i+25, n)}:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(batches)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// printSweep prints section 8.
func printSweep(w io.Writer, s sweepResult) {
	fmt.Fprintf(w, "\n8. One sweep's reads: %d finished jobs (%.1f KB each) and %d confirmed rows (%.1f KB each) beside %d live items; history loaded in %.1f s\n",
		s.Jobs, float64(s.JobBytes)/1024, s.Rows, float64(s.RowBytes)/1024, s.Live, s.Load.Seconds())
	fmt.Fprintf(w, "   (BatchWriteItem, %.0f items/s); items read = ScannedCount, read units as DynamoDB Local reported them, time: median sweep\n",
		float64(s.Jobs+s.Rows)/s.Load.Seconds())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	line("sweep", "items read", "read units", "calls", "live found", "ms", "")
	line("sparse indexes (StuckJobs, Unsettled)", fmt.Sprint(s.Index.Scanned), fmt.Sprintf("%.1f", s.Index.Units), fmt.Sprint(s.Index.Calls),
		fmt.Sprint(s.Index.Found), fmt.Sprintf("%.1f", ms(s.Index.Took)), "")
	line("Scan of both tables (before the indexes)", fmt.Sprint(s.Scan.Scanned), fmt.Sprintf("%.1f", s.Scan.Units), fmt.Sprint(s.Scan.Calls),
		fmt.Sprint(s.Scan.Found), fmt.Sprintf("%.1f", ms(s.Scan.Took)), "")
	line("Scan / indexes", ratio(float64(s.Scan.Scanned), float64(s.Index.Scanned)), ratio(s.Scan.Units, s.Index.Units), "", "",
		ratio(float64(s.Scan.Took), float64(s.Index.Took)), "")
	tw.Flush()
	goal := 2*s.Live + 2
	fmt.Fprintf(w, "   goal: items read per sweep <= 2 x live + a constant (here %d + 2 = %d): indexes read %d, %s; the Scan read %d\n",
		2*s.Live, goal, s.Index.Scanned, met(s.Index.Scanned <= int64(goal)), s.Scan.Scanned)
}
