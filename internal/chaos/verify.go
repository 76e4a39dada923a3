package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/mail"
	"github.com/criticizer/criticizer/internal/queue"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
)

// checker reads the end state through fault-free clients.
type checker struct {
	clean *devstack.Clients
	res   devstack.Resources
	ses   string
}

func (c *checker) jobs() *dynamo.Jobs {
	return dynamo.NewJobs(c.clean.DynamoDB, c.res.JobsTable, time.Now)
}

// nonTerminal counts accepted jobs not yet in a terminal state.
func (c *checker) nonTerminal(ctx context.Context, accepted map[job.ID]bool) (int, error) {
	n := 0
	for id := range accepted {
		j, err := c.jobs().Get(ctx, id)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				n++
				continue
			}
			return 0, err
		}
		if !j.Status.Terminal() {
			n++
			continue
		}
		if j.Status == job.StatusNeedsIntervention {
			// Held for provider evidence: it settles once the evidence
			// path catches up, and the job then succeeds.
			held, err := c.heldRows(ctx, j)
			if err != nil {
				return 0, err
			}
			if held {
				n++
			}
		}
	}
	return n, nil
}

// quiet reports whether the campaign has drained: every accepted job
// terminal, and no message left in a stage queue, visible, in flight or
// delayed. A job's status alone is not enough: a message of a batch that
// died (a crash, a timeout kill) comes back after the visibility timeout
// and runs its stage again, which may still change the job or write to a
// DLQ. (A stage once wrote dead_lettered before it sent the envelope, and
// stopping the workers early reported a job dead-lettered with no
// envelope, seed 4, rate 0.1; it now marks the job only after the send,
// R-STAGE-4.) open is the number of jobs not yet terminal, busy the stage
// messages still queued.
func (c *checker) quiet(ctx context.Context, accepted map[job.ID]bool) (open, busy int, err error) {
	if open, err = c.nonTerminal(ctx, accepted); err != nil || open > 0 {
		return open, 0, err
	}
	busy, err = c.stagesBusy(ctx)
	return 0, busy, err
}

// stagesBusy counts the messages in the stage queues: visible, in flight
// or delayed.
func (c *checker) stagesBusy(ctx context.Context) (int, error) {
	q := queue.New(c.clean.SQS, queue.URLs{})
	n := 0
	for _, s := range job.Stages() {
		cnt, err := q.Counts(ctx, c.res.Queues.Queue[s])
		if err != nil {
			return 0, fmt.Errorf("count the %s queue: %w", s, err)
		}
		n += cnt.Visible + cnt.InFlight + cnt.Delayed
	}
	return n, nil
}

// feedbackBusy counts the messages in the feedback queue and its DLQ.
func (c *checker) feedbackBusy(ctx context.Context) (int, error) {
	q := queue.New(c.clean.SQS, queue.URLs{})
	n := 0
	for _, u := range []string{c.res.FeedbackQueue, c.res.FeedbackDLQ} {
		cnt, err := q.Counts(ctx, u)
		if err != nil {
			return 0, fmt.Errorf("count the feedback queues: %w", err)
		}
		n += cnt.Visible + cnt.InFlight + cnt.Delayed
	}
	return n, nil
}

// heldRows reports whether any of a job's rows is still in `sending`.
func (c *checker) heldRows(ctx context.Context, j job.Job) (bool, error) {
	ids := make([]string, len(j.Recipients))
	for i, r := range j.Recipients {
		ids[i] = delivery.ID(job.ChangelistKey(j.Source, j.ChangelistID), r, j.ReviewVersion)
	}
	rows, err := dynamo.NewDeliveries(c.clean.DynamoDB, c.res.DeliveriesTable, time.Now).GetMany(ctx, ids)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(rows, func(r delivery.Row) bool { return r.Status == delivery.StatusSending }), nil
}

// jobOfDelivery maps the campaign's delivery ids to their jobs.
func jobOfDelivery(specs []spec) func(string) (job.ID, bool) {
	m := map[string]job.ID{}
	for _, sp := range specs {
		for _, r := range sp.Recipients {
			m[delivery.ID(job.ChangelistKey("generic", sp.Changelist), r, 1)] = sp.ID
		}
	}
	return func(id string) (job.ID, bool) {
		j, ok := m[id]
		return j, ok
	}
}

// dlqMessage is one message read from a dead-letter queue.
type dlqMessage struct {
	queue, body string
	env         deadletter.Envelope
	isEnvelope  bool
	jobID       job.ID
}

// readDLQ reads every message of a queue once (they stay hidden for the
// rest of the run, so none is counted twice).
func (c *checker) readDLQ(ctx context.Context, name, url string) ([]dlqMessage, error) {
	var out []dlqMessage
	for empty := 0; empty < 3; {
		r, err := c.clean.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url),
			MaxNumberOfMessages: 10, VisibilityTimeout: 600})
		if err != nil {
			return nil, fmt.Errorf("read %s DLQ: %w", name, err)
		}
		if len(r.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range r.Messages {
			dm := dlqMessage{queue: name, body: aws.ToString(m.Body)}
			if env, ok, err := deadletter.Decode([]byte(dm.body)); err == nil && ok {
				dm.env, dm.isEnvelope, dm.jobID = env, true, job.ID(env.JobID)
			} else if ids := batchJobs([]string{dm.body}); len(ids) == 1 {
				dm.jobID = ids[0]
			}
			out = append(out, dm)
		}
	}
	return out, nil
}

// complete reports what a dead-letter envelope lacks (R-STAGE-4), if anything.
func complete(e deadletter.Envelope, stage string) []string {
	var miss []string
	check := func(ok bool, what string) {
		if !ok {
			miss = append(miss, what)
		}
	}
	check(e.SchemaVersion == deadletter.SchemaVersion, "schema_version")
	check(e.ID != "", "id")
	check(e.JobID != "", "job_id")
	check(e.Stage == stage, "stage")
	check(e.ErrorClass != "", "error_class")
	check(e.LastStack != "", "last_stack")
	check(len(e.SanitizedContext) > 0, "sanitized_context")
	check(!e.FirstFailureAt.IsZero() && !e.LastFailureAt.Before(e.FirstFailureAt), "failure times")
	check(e.Attempts >= 1, "attempts")
	check(e.Original.Body != "", "original message")
	return miss
}

// verify fills the report from the SES store, DynamoDB and the DLQs.
func (c *checker) verify(ctx context.Context, rep *Report, specs []spec, accepted map[job.ID]bool, inj *injector, evf *evidenceFaults,
	pf *platformFaults, leaks *leakScanner, rp *replier) error {
	// Emails, by delivery id.
	type want struct {
		job       job.ID
		recipient string
	}
	wanted := map[string]want{}
	for _, sp := range specs {
		for _, r := range sp.Recipients {
			wanted[delivery.ID(job.ChangelistKey("generic", sp.Changelist), r, 1)] = want{sp.ID, r}
		}
	}
	emails, err := (&devstack.SESEmulator{BaseURL: c.ses}).Emails(ctx)
	if err != nil {
		return fmt.Errorf("read the SES store: %w", err)
	}
	sent := map[string]int{}
	// A daily reader's version is emailed by the digests that show it.
	covered, err := c.digestCoverage(ctx, rep, specs, emails)
	if err != nil {
		return err
	}
	for id, n := range covered {
		sent[id] += n
		rep.Emails += n
	}
	for _, e := range emails {
		id := e.Header(mail.DeliveryIDHeader)
		w, ok := wanted[id]
		if !ok && rp.isConfirmation(id) {
			continue // a reply's confirmation, checked below
		}
		if !ok {
			if strings.Contains(e.Subject, rep.Run+"-cl") {
				rep.Stray++
			}
			continue
		}
		rep.Emails++
		sent[id]++
		if !slices.ContainsFunc(e.Destination.To, func(to string) bool { return strings.EqualFold(to, w.recipient) }) {
			rep.Misaddressed++
		}
	}

	if err := rp.verify(ctx, c.clean, c.res, emails, rep); err != nil {
		return err
	}

	// Dead letters.
	byJob := map[job.ID][]dlqMessage{}
	for _, s := range job.Stages() {
		msgs, err := c.readDLQ(ctx, string(s), c.res.Queues.DLQ[s])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			rep.DLQMessages++
			leaks.scan("dlq", []byte(m.body))
			if !m.isEnvelope {
				rep.RawDLQ++
			} else if miss := complete(m.env, string(s)); len(miss) > 0 {
				rep.Problems = append(rep.Problems, fmt.Sprintf("envelope %s in the %s DLQ lacks %s", m.env.ID, s, strings.Join(miss, ", ")))
				m.isEnvelope = false
			}
			if m.jobID != "" {
				byJob[m.jobID] = append(byJob[m.jobID], m)
			}
			rep.hooks.deadLettered(m) // a post task's (hooks.go)
		}
	}
	if c.res.FeedbackDLQ != "" {
		msgs, err := c.readDLQ(ctx, "feedback", c.res.FeedbackDLQ)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			rep.FeedbackDLQ++
			leaks.scan("dlq", []byte(m.body))
		}
		// Every feedback message, validation notices and redriven ones
		// included, must have been processed and deleted: one left in the
		// queue or its DLQ is evidence never recorded (and an alarm).
		n, err := queue.New(c.clean.SQS, queue.URLs{}).Counts(ctx, c.res.FeedbackQueue)
		if err != nil {
			return fmt.Errorf("count the feedback queue: %w", err)
		}
		rep.FeedbackLeft = rep.FeedbackDLQ + n.Visible + n.InFlight + n.Delayed
		if rep.FeedbackLeft > 0 {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%d feedback messages left unprocessed (%d in the feedback DLQ)", rep.FeedbackLeft, rep.FeedbackDLQ))
		}
	}

	// Each job.
	rep.kinds = map[Kind]*KindRow{}
	for _, k := range allKinds() {
		rep.kinds[k] = &KindRow{Kind: k}
	}
	total, byOp := inj.injected()
	rep.ByOp = byOp
	for k, n := range total {
		rep.kinds[k].Injected = n
	}
	for k, n := range evf.injected() {
		rep.kinds[k].Injected = n
	}
	for k, n := range pf.injected() {
		rep.kinds[k].Injected = n
	}
	pf.figures(rep)
	rep.Accepted = len(accepted)
	for _, sp := range specs {
		if !accepted[sp.ID] {
			rep.NotAccepted++
			continue
		}
		dups, missing := 0, 0
		var dupIDs []string
		for _, r := range sp.Recipients {
			did := delivery.ID(job.ChangelistKey("generic", sp.Changelist), r, 1)
			n := sent[did]
			if n > 1 {
				dups += n - 1
				dupIDs = append(dupIDs, did)
			}
			if n == 0 {
				missing++
			}
		}
		var outcome string
		j, err := c.jobs().Get(ctx, sp.ID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			outcome = "lost"
			rep.Problems = append(rep.Problems, fmt.Sprintf("job %s was accepted but has no row", sp.ID))
		case err != nil:
			return fmt.Errorf("read job %s: %w", sp.ID, err)
		case j.Status == job.StatusSucceeded && missing == 0:
			outcome = "delivered"
		case j.Status == job.StatusSucceeded:
			outcome = "lost"
			rep.Problems = append(rep.Problems, fmt.Sprintf("job %s succeeded but %d of %d recipients have no email", sp.ID, missing, len(sp.Recipients)))
		case j.Status == job.StatusDeadLettered || j.Status == job.StatusNeedsIntervention:
			ok := slices.ContainsFunc(byJob[sp.ID], func(m dlqMessage) bool { return m.isEnvelope })
			if ok {
				outcome = "dead_lettered"
				if j.Status == job.StatusNeedsIntervention {
					rep.NeedsIntervention++
				}
			} else {
				outcome = "lost"
				raw := len(byJob[sp.ID])
				rep.Problems = append(rep.Problems, fmt.Sprintf("job %s is %s (%s) but no complete envelope names it (%d raw DLQ messages)",
					sp.ID, j.Status, failureText(j.DeadLetter), raw))
			}
		default:
			outcome = "stuck"
			rep.Problems = append(rep.Problems, fmt.Sprintf("job %s is still %s at stage %s after the drain (last error %s)",
				sp.ID, j.Status, j.Stage, failureText(j.LastError)))
		}
		if sp.Poison {
			rep.Poisoned++
			if outcome != "dead_lettered" {
				rep.PoisonNotDeadLettered++
				rep.Problems = append(rep.Problems, fmt.Sprintf("job %s has a malformed diff but ended %s", sp.ID, outcome))
			}
		} else if outcome == "dead_lettered" {
			rep.DeadLetteredHealthy++
		}
		if dups > 0 {
			rep.Problems = append(rep.Problems, fmt.Sprintf("job %s: %d duplicate emails (deliveries %s)", sp.ID, dups, strings.Join(dupIDs, ", ")))
		}
		if outcome == "delivered" && len(byJob[sp.ID]) > 0 {
			rep.DeliveredWithDLQ++
		}
		rep.Duplicates += dups
		rep.count(outcome, 1)
		hits := map[Kind]int{}
		for _, m := range []map[Kind]int{inj.jobHits(sp.ID), evf.jobHits(sp.ID), pf.jobHits(sp.ID)} {
			for k, n := range m {
				hits[k] += n
			}
		}
		if len(hits) == 0 {
			rep.Unhit++
		}
		for k := range hits {
			row := rep.kinds[k]
			row.Jobs++
			row.Duplicates += dups
			switch outcome {
			case "delivered":
				row.Recovered++
			case "dead_lettered":
				row.DeadLettered++
			case "lost":
				row.Lost++
			case "stuck":
				row.Stuck++
			}
		}
	}
	if rep.Stray > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d emails of this run carry no expected delivery id", rep.Stray))
	}
	if rep.Misaddressed > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d emails went to an address other than their row's", rep.Misaddressed))
	}
	return nil
}

func failureText(f *job.Failure) string {
	if f == nil {
		return "none"
	}
	return fmt.Sprintf("%s/%s attempt %d", f.Stage, f.ErrorClass, f.Attempt)
}
