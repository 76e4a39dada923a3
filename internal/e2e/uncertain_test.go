package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/sesevent"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/wire"
)

// flow mails another review every `every` until stop is called, which
// reports how many were accepted: the steady traffic the evidence path
// must tell apart from a backlog.
func flow(t *testing.T, s *stack, cl string, every time.Duration) (stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	n := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
			ocl := fmt.Sprintf("%s-other-%d", cl, i)
			accept(t, s, "k-"+ocl, sample(t, ocl, 1, fmt.Sprintf("other%d@example.com", i)))
			n++
		}
	}()
	return func() int { cancel(); wg.Wait(); return n }
}

// metricMax is the largest value a metric took in the functions' log.
func metricMax(logs, name string) float64 {
	best := 0.0
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, `"msg":"metric"`) || !strings.Contains(line, `"`+name+`"`) {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if v, ok := m[name].(float64); ok && v > best {
			best = v
		}
	}
	return best
}

// One record that can never be evidence, published to the SES events
// topic, and steady traffic that keeps a message in flight in the
// feedback queue at every sweep (each held in flight for most of the
// queue's visibility timeout, as a Lambda invocation would): a send whose
// request was lost (SES got nothing; the notifier cannot know) still
// settles, within the documented bound: the record is quarantined (an
// object in the payload bucket, never in the feedback DLQ), the drain time
// moves on a run of clear readings longer than the queue's horizon, and
// the row is sent once. EvidenceLag showed the wait meanwhile. Before,
// the record sat in the DLQ and the queue never read empty: the row was
// held until someone intervened.
// Rules: R-EVIDENCE-10, R-EVIDENCE-2, R-RECON-3, R-OUTBOX-10.
func TestEvidence_UndecodableRecordAndSteadyTraffic_LostRequestSettles(t *testing.T) {
	t.Parallel()
	const rcpt = "steady@example.com"
	cl := testenv.Prefix(t)
	inj := fault.New(fault.Rule{Service: "SESv2", Operation: "SendEmail", Match: to(rcpt), Kind: fault.LoseRequest, Times: 1})
	// Every feedback message is held in flight once, for most of the
	// visibility timeout: a message is always in flight somewhere.
	const visibility, maxReceives = 2 * time.Second, 2
	inFlight := &devstack.HoldOnce{Match: func(events.SQSMessage) bool { return true }, For: 1500 * time.Millisecond}
	s := startStack(t, devstack.FunctionOptions{SweepEvery: 500 * time.Millisecond, Wire: wire.Options{AWS: []awsclient.Option{inj.Option()}},
		Hold: func(fn string, m events.SQSMessage) time.Duration {
			if fn != "feedback" {
				return 0
			}
			return inFlight.Hold(m)
		}},
		func(c *config.Config) {
			c.Notify.DeliveryLease, c.EvidenceMargin, c.Sweep.Every = time.Second, 2*time.Second, 500*time.Millisecond
		})
	ctx := context.Background()
	redrive, _ := json.Marshal(map[string]string{"deadLetterTargetArn": queueARN(t, s, s.res.FeedbackDLQ), "maxReceiveCount": fmt.Sprint(maxReceives)})
	if _, err := s.env.Clients.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(s.res.FeedbackQueue),
		Attributes: map[string]string{"VisibilityTimeout": fmt.Sprint(visibility.Seconds()), "RedrivePolicy": string(redrive)}}); err != nil {
		t.Fatal(err)
	}
	// The drain rule's horizon for this queue (internal/drain), and the
	// documented bound on a row's wait: the publish bound, the horizon, two
	// sweeps and notify's longest wait between looks (the retry policy's
	// maximum backoff).
	every, lag := s.cfg.Sweep.Every, s.cfg.EvidenceCounterLag
	horizon := (maxReceives+1)*(3*every+lag) + maxReceives*visibility
	bound := s.cfg.EvidenceMargin + horizon + 2*every + retry.DefaultPolicy().Max

	undecodable := "not an SES event, from someone.private@example.com"
	if _, err := s.env.Clients.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(s.res.EventsTopicARN), Message: aws.String(undecodable)}); err != nil {
		t.Fatal(err)
	}
	stop := flow(t, s, cl, 400*time.Millisecond)
	id := accept(t, s, "k-"+cl, sample(t, cl, 1, rcpt))
	accepted := time.Now()
	s.waitJob(id, bound+time.Minute, job.StatusSucceeded)
	took := time.Since(accepted)
	others := stop()

	if n := perRecipient(emailsFor(t, s.env.SES, cl))[rcpt]; n != 1 {
		t.Fatalf("%d emails to %s, want exactly one", n, rcpt)
	}
	if n := countLines(s.logText(), `"msg":"metric"`, `"ResentWithoutEvidence":1`); n != 1 {
		// What the row went through, to tell a resend counted twice from
		// a send that never waited on the evidence path.
		var trail []string
		for _, line := range strings.Split(s.logText(), "\n") {
			if strings.Contains(line, `"job_id":"`+string(id)+`"`) && !strings.Contains(line, `"msg":"metric"`) {
				trail = append(trail, line)
			}
		}
		t.Errorf("ResentWithoutEvidence counted %d times, want 1: the row was not sent again after the evidence path caught up, so the test did not test the drain; the job's log:\n%s",
			n, strings.Join(trail, "\n"))
	}
	if others < 5 {
		t.Errorf("only %d other reviews flowed: no steady traffic", others)
	}
	// The quarantine holds the record; the DLQ does not; no log line holds
	// its address.
	objs, err := s.env.Clients.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.cfg.PayloadBucket),
		Prefix: aws.String(sesevent.QuarantinePrefix + "/")})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range objs.Contents {
		out, err := s.env.Clients.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.cfg.PayloadBucket), Key: o.Key})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		found = found || strings.Contains(string(b), undecodable)
	}
	if !found {
		t.Errorf("no quarantined copy of the record under %s/ (%d objects)", sesevent.QuarantinePrefix, len(objs.Contents))
	}
	if n := queueDepth(t, s, s.res.FeedbackDLQ); n != 0 {
		t.Errorf("%d messages in the feedback DLQ, want none", n)
	}
	if strings.Contains(s.logText(), "someone.private@example.com") {
		t.Error("the quarantined record's address reached the log")
	}
	if countLines(s.logText(), `"QuarantinedFeedback":1`) != 1 {
		t.Error("QuarantinedFeedback not counted once")
	}
	// EvidenceLag showed the row's wait, from its send.
	if lagged := metricMax(s.logText(), "EvidenceLag"); lagged < s.cfg.EvidenceMargin.Seconds() {
		t.Errorf("EvidenceLag peaked at %.1f s while the row waited, want at least the publish bound", lagged)
	}
	t.Logf("settled after %s (documented bound %s, horizon %s); %d other reviews; EvidenceLag peaked at %.1f s",
		took.Round(time.Second), bound, horizon, others, metricMax(s.logText(), "EvidenceLag"))
}

// A send whose answer was lost, its Send event reaching the feedback
// queue later than the publish bound (SES and SNS promise none) while
// other reviews' events flow and the path catches up past the send: under
// CRITICIZER_UNCERTAIN_SEND=hold the row is never resent; the late event
// settles it, and the reader has one email. LateSendEvents counts the late
// event. Scaled by default; CRITICIZER_E2E_LATE sets the lateness.
// Rules: R-EVIDENCE-9, R-EVIDENCE-7, R-OUTBOX-10.
func TestUncertainSend_Hold_LateSendEvent_OneEmail(t *testing.T) {
	t.Parallel()
	s, rcpt, cl, id, publishLate := lateSendWorld(t, delivery.HoldUncertain)
	late, _ := lateness(t)
	held := time.Now()
	// Held well past the point where resend would have sent it again.
	eventually(t, late+time.Minute, "the hold policy to withhold the row", func() bool {
		return countLines(s.logText(), "held, not resent (hold policy)") > 0 || perRecipient(emailsFor(t, s.env.SES, cl))[rcpt] > 1
	})
	if n := perRecipient(emailsFor(t, s.env.SES, cl))[rcpt]; n != 1 {
		t.Fatalf("%d emails to %s while held, want one", n, rcpt)
	}
	if d := late - time.Since(held); d > 0 {
		time.Sleep(d)
	}
	heldID := publishLate()
	s.waitJob(id, time.Minute, job.StatusSucceeded)
	eventually(t, 30*time.Second, "the withheld Send event counted late", func() bool {
		return countLines(s.logText(), "later than the evidence bound", `"provider_message_id":"`+heldID+`"`) >= 1
	})
	if n := perRecipient(emailsFor(t, s.env.SES, cl))[rcpt]; n != 1 {
		t.Fatalf("%d emails to %s, want exactly one", n, rcpt)
	}
	if n := countLines(s.logText(), `"msg":"metric"`, `"ResentWithoutEvidence":1`); n != 0 {
		t.Errorf("ResentWithoutEvidence %d under the hold policy", n)
	}
}

// The same world under CRITICIZER_UNCERTAIN_SEND=resend (the default):
// once the path has caught up past the send the row is sent again, so the
// reader has two emails when the Send event arrives late, and
// LateSendEvents counts it: the one case where a second email happens,
// alarmed.
// Rules: R-EVIDENCE-9, R-EVIDENCE-7.
func TestUncertainSend_Resend_LateSendEvent_TwoEmailsCounted(t *testing.T) {
	t.Parallel()
	s, rcpt, cl, id, publishLate := lateSendWorld(t, delivery.ResendUncertain)
	late, _ := lateness(t)
	start := time.Now()
	s.waitJob(id, late+time.Minute, job.StatusSucceeded)
	if d := late - time.Since(start); d > 0 {
		time.Sleep(d)
	}
	heldID := publishLate()
	// Counted for the withheld message: the stack's other Send events
	// may be late too on a loaded machine (the bound is 2 s here, and the
	// SES bridge polls), and each of those is counted as it should be.
	lateOfHeld := func() int {
		return countLines(s.logText(), "later than the evidence bound", `"provider_message_id":"`+heldID+`"`)
	}
	eventually(t, 30*time.Second, "LateSendEvents", func() bool {
		return countLines(s.logText(), `"LateSendEvents":1`) >= 1 && lateOfHeld() >= 1
	})
	if n := perRecipient(emailsFor(t, s.env.SES, cl))[rcpt]; n != 2 {
		t.Fatalf("%d emails to %s, want two (the resend, then the late event)", n, rcpt)
	}
	if n := lateOfHeld(); n != 1 {
		t.Errorf("the withheld Send event counted late %d times, want 1", n)
	}
	// The row's own count: on a loaded machine another review's send may
	// outlast this world's 1 s lease and be resent too, which the metric
	// counts as it should.
	row := s.row(delivery.ID(job.ChangelistKey("generic", cl), rcpt, 1))
	if row.ResentWithoutEvidence != 1 || countLines(s.logText(), `"msg":"metric"`, `"ResentWithoutEvidence":1`) < 1 {
		t.Errorf("the row was resent without evidence %d times (want 1), and the metric said so %d times",
			row.ResentWithoutEvidence, countLines(s.logText(), `"msg":"metric"`, `"ResentWithoutEvidence":1`))
	}
}

// lateSendWorld starts a stack under the policy where the first send to
// rcpt is accepted by SES but its answer lost, and that message's events
// are withheld from the topic until publishLate; other reviews flow
// meanwhile (stopped at the test's end).
func lateSendWorld(t *testing.T, policy delivery.UncertainSend) (s *stack, rcpt, cl string, id job.ID, publishLate func() string) {
	t.Helper()
	_, every := lateness(t)
	rcpt = "late-" + string(policy) + "@example.com"
	cl = testenv.Prefix(t)
	did := delivery.ID(job.ChangelistKey("generic", cl), rcpt, 1)
	inj := fault.New(fault.Rule{Service: "SESv2", Operation: "SendEmail", Match: to(rcpt), Kind: fault.LoseAnswer, Times: 1})
	s = startStack(t, devstack.FunctionOptions{SweepEvery: 500 * time.Millisecond, Wire: wire.Options{AWS: []awsclient.Option{inj.Option()}}},
		func(c *config.Config) {
			c.Notify.DeliveryLease, c.EvidenceMargin, c.UncertainSend = time.Second, 2*time.Second, policy
		})
	var mu sync.Mutex
	var withheld []devstack.SESEvent
	held := map[devstack.SESEvent]bool{}
	first := ""
	s.fns.Bridge.Deliver = func(ctx context.Context, evs []devstack.SESEvent, publish func(context.Context, devstack.SESEvent) error) error {
		for _, e := range evs {
			mu.Lock()
			if e.DeliveryID == did && (first == "" || first == e.MessageID) {
				first = e.MessageID // the first message's events come late
				// The bridge offers a batch again when a publish in it
				// failed (a slow SNS emulator under load): hold each
				// event once, as SES publishes it once.
				if !held[e] {
					held[e] = true
					withheld = append(withheld, e)
				}
				mu.Unlock()
				continue
			}
			mu.Unlock()
			if err := publish(ctx, e); err != nil {
				return err
			}
		}
		return nil
	}
	stop := flow(t, s, cl, every)
	t.Cleanup(func() { stop() })
	id = accept(t, s, "k-"+cl, sample(t, cl, 1, rcpt))
	publishLate = func() string {
		t.Helper()
		mu.Lock()
		evs, heldID := withheld, first
		mu.Unlock()
		if len(evs) == 0 {
			t.Fatal("no event of the first send was withheld: the test did not test anything")
		}
		for _, e := range evs {
			if err := s.fns.Bridge.Publish(context.Background(), e); err != nil {
				t.Fatal(err)
			}
		}
		return heldID
	}
	return s, rcpt, cl, id, publishLate
}
