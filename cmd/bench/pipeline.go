package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/sesmail"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/webhook"
	"github.com/criticizer/criticizer/internal/wire"
)

// timedSender wraps the SES sender and notes when each delivery's send
// returned, with the monotonic clock (the SES emulator's store keeps whole
// seconds only).
type timedSender struct {
	inner pipeline.Sender
	mu    sync.Mutex
	sent  map[string]time.Time
}

func (s *timedSender) Send(ctx context.Context, deliveryID, to string, m delivery.Message) (string, error) {
	id, err := s.inner.Send(ctx, deliveryID, to, m)
	if err == nil {
		s.mu.Lock()
		if _, ok := s.sent[deliveryID]; !ok {
			s.sent[deliveryID] = time.Now()
		}
		s.mu.Unlock()
	}
	return id, err
}

func (s *timedSender) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
}

// localStack is a running set of functions on fresh resources.
type localStack struct {
	cfg    config.Config
	res    devstack.Resources
	fns    *devstack.Functions
	sender *timedSender
	// Uncounted: for the bench's own polling.
	plain *devstack.Clients
	jobs  *dynamo.Jobs
	rows  *dynamo.Deliveries
	// meter, if set, times every invocation (intake's too).
	meter *meter
}

func startLocal(ctx context.Context, base config.Config, prefix string, counter *Counter, pollers int, log *slog.Logger, m *meter) (*localStack, error) {
	plain, err := devstack.NewClients(ctx, base.Endpoints, quiet)
	if err != nil {
		return nil, err
	}
	res, err := devstack.Provision(ctx, plain, prefix)
	if err != nil {
		return nil, err
	}
	cfg := base
	res.Apply(&cfg)
	counted, err := devstack.NewClients(ctx, cfg.Endpoints, counter.Option(), quiet)
	if err != nil {
		return nil, err
	}
	s := &timedSender{inner: sesmail.NewSender(counted.SES, cfg.MailFrom, cfg.ConfigurationSet), sent: map[string]time.Time{}}
	opts := devstack.FunctionOptions{
		Pollers: pollers, Sender: s, NoEventBridge: true,
		Wire: wire.Options{AWS: []awsclient.Option{counter.Option(), quiet},
			Wrap: func(st job.Stage, fn stage.Func) stage.Func {
				return func(ctx context.Context, m job.Message, attempt int) error {
					return fn(WithTag(ctx, string(st)), m, attempt)
				}
			}},
	}
	if m != nil {
		// devstack's hooks around each function's SQS handler: the
		// meter times each invocation and tags everything it does.
		opts.Crash = m.stage
		opts.Feedback = func(h devstack.SQSHandler) devstack.SQSHandler { return m.sqs("feedback", h) }
	}
	fns, err := devstack.StartFunctions(ctx, cfg, res, log, opts)
	if err != nil {
		return nil, err
	}
	return &localStack{cfg: cfg, res: res, fns: fns, sender: s, plain: plain, meter: m,
		jobs: dynamo.NewJobs(plain.DynamoDB, cfg.JobsTable, nil), rows: dynamo.NewDeliveries(plain.DynamoDB, cfg.DeliveriesTable, nil)}, nil
}

// sampleWebhook is events/generic-webhook.json (inline diff: intake stores
// it in S3, the llm stage reads it back) with a changelist id and recipients.
func sampleWebhook(changelistID string, recipients []string) ([]byte, error) {
	b, err := os.ReadFile("events/generic-webhook.json")
	if err != nil {
		return nil, fmt.Errorf("run from the repository root: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["changelist_id"], m["recipients"] = changelistID, recipients
	return json.Marshal(m)
}

func recipientsN(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("reviewer%d@example.com", i+1)
	}
	return out
}

// postAll sends n webhooks to the intake handler, rate per second (0: as
// fast as one client can), and returns when each was answered, by delivery id.
func postAll(ctx context.Context, ls *localStack, prefix string, n, rcpts int, rate float64, secret []byte) (map[string]time.Time, []job.ID, error) {
	posted := map[string]time.Time{}
	var ids []job.ID
	var tick <-chan time.Time
	if rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer t.Stop()
		tick = t.C
	}
	for i := range n {
		if tick != nil {
			<-tick
		}
		t0 := time.Now()
		deliveries, id, err := postOne(ctx, ls, fmt.Sprintf("%s-%d", prefix, i), rcpts, secret)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range deliveries {
			posted[d] = t0
		}
		ids = append(ids, id)
	}
	return posted, ids, nil
}

// postOne posts one signed webhook for changelist cl with rcpts
// recipients and returns its delivery ids and job id.
func postOne(ctx context.Context, ls *localStack, cl string, rcpts int, secret []byte) ([]string, job.ID, error) {
	rs := recipientsN(rcpts)
	body, err := sampleWebhook(cl, rs)
	if err != nil {
		return nil, "", err
	}
	t0 := time.Now()
	resp, err := ls.fns.Intake.Handle(WithTag(ctx, "intake"), apiEvent(request{Key: "delivery-" + cl, Body: string(body), Sig: webhook.Sign(secret, body)}))
	if ls.meter != nil {
		ls.meter.record("intake", 1, time.Since(t0))
	}
	if err != nil || resp.StatusCode != 202 {
		return nil, "", fmt.Errorf("webhook %s: HTTP %d %s %v", cl, resp.StatusCode, resp.Body, err)
	}
	ck := job.ChangelistKey("generic", cl)
	var deliveries []string
	for _, r := range rs {
		deliveries = append(deliveries, delivery.ID(ck, delivery.NormalizeRecipient(r), 1))
	}
	return deliveries, job.NewID("generic", cl, 1), nil
}

// waitSent waits until want sends returned.
func waitSent(ctx context.Context, ls *localStack, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for ls.sender.count() < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s: %d of %d emails sent", timeout, ls.sender.count(), want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// waitDone waits until every job succeeded (the notify stage's last write).
func waitDone(ctx context.Context, ls *localStack, ids []job.ID, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, id := range ids {
		for {
			j, err := ls.jobs.Get(ctx, id)
			if err == nil && j.Status == job.StatusSucceeded {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("timed out waiting for job %s to succeed (status %q): %w", id, j.Status, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

type pipelineResult struct {
	Webhooks, Emails, InStore int
	P50, P99, Max             time.Duration
	Elapsed                   time.Duration
}

// runPipeline posts n webhooks at rate per second through the running
// functions and measures, per email, the time from the webhook reaching
// intake to the SES send returning.
func runPipeline(ctx context.Context, base config.Config, runID string, n, rcpts int, rate float64, pollers int, timeout time.Duration, log *slog.Logger) (pipelineResult, error) {
	ls, err := startLocal(ctx, base, "bench-"+runID+"-pipe", NewCounter(), pollers, log, nil)
	if err != nil {
		return pipelineResult{}, err
	}
	defer ls.fns.Stop()
	prefix := "pipe-" + runID
	start := time.Now()
	posted, _, err := postAll(ctx, ls, prefix, n, rcpts, rate, []byte(base.WebhookSecret))
	if err != nil {
		return pipelineResult{}, err
	}
	if err := waitSent(ctx, ls, len(posted), timeout); err != nil {
		return pipelineResult{}, err
	}
	res := pipelineResult{Webhooks: n, Elapsed: time.Since(start)}
	ls.sender.mu.Lock()
	var lat []time.Duration
	for id, t0 := range posted {
		if t1, ok := ls.sender.sent[id]; ok {
			lat = append(lat, t1.Sub(t0))
		}
	}
	ls.sender.mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	res.Emails = len(lat)
	res.P50, res.P99, res.Max = percentile(lat, 0.5), percentile(lat, 0.99), lat[len(lat)-1]
	emails, err := (&devstack.SESEmulator{BaseURL: base.SESStoreURL}).Emails(ctx)
	if err != nil {
		return res, err
	}
	for _, e := range emails {
		if strings.Contains(e.Subject, "] "+prefix+"-") {
			res.InStore++
		}
	}
	if res.InStore != len(posted) {
		return res, fmt.Errorf("the SES store holds %d emails for this run, want %d", res.InStore, len(posted))
	}
	return res, nil
}
