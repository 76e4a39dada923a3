// Package ops is the operator's side of R-STAGE-5: triage of the
// dead-letter queues, replay at the failed stage (or from the start),
// resolution without replay, and job inspection. cmd/criticizer is its
// command line.
package ops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/queue"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
)

// Ops runs operator actions.
type Ops struct {
	SQS        *sqs.Client
	Queues     queue.URLs
	Jobs       *dynamo.Jobs
	Deliveries *dynamo.Deliveries
	// Evidence and ConfigurationSet read the SES evidence path;
	// Margin is the notifier's evidence margin (CRITICIZER_EVIDENCE_MARGIN).
	Evidence         *dynamo.Evidence
	ConfigurationSet string
	Margin           time.Duration
	// Policy is the deployment's CRITICIZER_UNCERTAIN_SEND: under hold, a
	// send whose answer was lost waits for its events or an operator.
	Policy delivery.UncertainSend
	// Directory is the reviewer directory (criticizer directory).
	Directory *dynamo.Directory
	// Learnings are the team's learnings (criticizer learnings);
	// LearnAfter is the deployment's CRITICIZER_LEARN_AFTER.
	Learnings  *dynamo.Learnings
	LearnAfter int
	Now        func() time.Time
	// Sleep waits between replays (rate limiting); tests may shorten it.
	Sleep func(context.Context, time.Duration)
}

// Item is one message in a dead-letter queue.
type Item struct {
	Stage         job.Stage
	Envelope      deadletter.Envelope
	Raw           bool // moved by the redrive policy, without an envelope
	MessageID     string
	receiptHandle string
}

// scan receives every message of a stage's DLQ, hiding each for hold (so
// one pass sees each message once), and returns them. The caller releases
// what it does not delete. SQS has no browse call: this is how a queue is
// read without consuming it.
func (o *Ops) scan(ctx context.Context, s job.Stage, hold time.Duration) ([]Item, error) {
	url := o.Queues.DLQ[s]
	if url == "" {
		return nil, fmt.Errorf("no dead-letter queue configured for stage %s", s)
	}
	var items []Item
	for empty := 0; empty < 2; {
		out, err := o.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: int32(hold / time.Second),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return items, fmt.Errorf("read %s dead-letter queue: %w", s, err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range out.Messages {
			items = append(items, o.item(s, m))
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Envelope.LastFailureAt.Before(items[j].Envelope.LastFailureAt) })
	return items, nil
}

// item decodes a DLQ message; a raw stage message (moved by the redrive
// policy after crash loops) is wrapped in an envelope so it can be triaged
// and replayed like any other.
func (o *Ops) item(s job.Stage, m sqstypes.Message) Item {
	body := aws.ToString(m.Body)
	it := Item{Stage: s, MessageID: aws.ToString(m.MessageId), receiptHandle: aws.ToString(m.ReceiptHandle)}
	env, ok, err := deadletter.Decode([]byte(body))
	if ok {
		it.Envelope = env
		return it
	}
	it.Raw = true
	sent := sentAt(m)
	var jm job.Message
	_ = json.Unmarshal([]byte(body), &jm)
	cause := deadletter.ErrRedriven
	if err != nil {
		cause = fmt.Errorf("%w: %w", deadletter.ErrRedriven, err)
	}
	it.Envelope = deadletter.New(deadletter.Failure{
		Stage: string(s), JobID: string(jm.JobID), Err: cause, Attempts: receiveCount(m),
		FirstFailureAt: sent, LastFailureAt: sent,
		Message: deadletter.Original{MessageID: it.MessageID, Body: body, Queue: o.Queues.DLQ[s]},
	})
	it.Envelope.ID = "raw-" + shortHash(it.MessageID)
	return it
}

// release makes items visible again at once.
func (o *Ops) release(ctx context.Context, items []Item) {
	byStage := map[job.Stage][]sqstypes.ChangeMessageVisibilityBatchRequestEntry{}
	for i, it := range items {
		byStage[it.Stage] = append(byStage[it.Stage], sqstypes.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(it.receiptHandle), VisibilityTimeout: 0})
	}
	for s, entries := range byStage {
		for start := 0; start < len(entries); start += 10 {
			_, _ = o.SQS.ChangeMessageVisibilityBatch(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityBatchInput{
				QueueUrl: aws.String(o.Queues.DLQ[s]), Entries: entries[start:min(start+10, len(entries))]})
		}
	}
}

// Scan reads the DLQs of the given stages (all when empty) without
// consuming them.
func (o *Ops) Scan(ctx context.Context, stages ...job.Stage) ([]Item, error) {
	if len(stages) == 0 {
		stages = job.Stages()
	}
	var all []Item
	for _, s := range stages {
		items, err := o.scan(ctx, s, 30*time.Second)
		o.release(ctx, items)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
	}
	return all, nil
}

// Group is one line of the triage view: a stage and error class.
type Group struct {
	Stage      job.Stage `json:"stage"`
	ErrorClass string    `json:"error_class"`
	Count      int       `json:"count"`
	Escalated  int       `json:"escalated"`
	Oldest     time.Time `json:"oldest"`
	Newest     time.Time `json:"newest"`
	Samples    []string  `json:"sample_ids"`
}

// Triage groups items by stage and error class (R-STAGE-5: "Confirm
// error_class, failing stage, and retry exhaustion details").
func Triage(items []Item, stage job.Stage, class string) []Group {
	byKey := map[string]*Group{}
	var order []string
	for _, it := range items {
		if (stage != "" && it.Stage != stage) || (class != "" && it.Envelope.ErrorClass != class) {
			continue
		}
		k := string(it.Stage) + "/" + it.Envelope.ErrorClass
		g, ok := byKey[k]
		if !ok {
			g = &Group{Stage: it.Stage, ErrorClass: it.Envelope.ErrorClass, Oldest: it.Envelope.FirstFailureAt, Newest: it.Envelope.LastFailureAt}
			byKey[k] = g
			order = append(order, k)
		}
		g.Count++
		if it.Envelope.Escalated {
			g.Escalated++
		}
		if it.Envelope.FirstFailureAt.Before(g.Oldest) {
			g.Oldest = it.Envelope.FirstFailureAt
		}
		if it.Envelope.LastFailureAt.After(g.Newest) {
			g.Newest = it.Envelope.LastFailureAt
		}
		if len(g.Samples) < 3 {
			g.Samples = append(g.Samples, it.Envelope.ID)
		}
	}
	sort.Strings(order)
	out := make([]Group, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	return out
}

// ErrNoNote is returned when a replay or resolution lacks remediation
// evidence (R-STAGE-5: "Ensure remediation evidence is recorded").
var ErrNoNote = errors.New("a --note with the remediation evidence is required")

// ErrNotInDLQ is returned when no dead-letter item has the id.
var ErrNotInDLQ = errors.New("no dead-letter item with that id")

// Selector picks items: by id, or by stage and optionally class.
type Selector struct {
	ID    string
	Stage job.Stage
	Class string
}

func (s Selector) match(it Item) bool {
	if s.ID != "" {
		return it.Envelope.ID == s.ID || it.MessageID == s.ID
	}
	return it.Stage == s.Stage && (s.Class == "" || it.Envelope.ErrorClass == s.Class)
}

func (s Selector) stages() []job.Stage {
	if s.ID == "" && s.Stage != "" {
		return []job.Stage{s.Stage}
	}
	return job.Stages()
}

// take scans the DLQs and keeps the matching items hidden (for the caller
// to delete) while releasing the rest.
func (o *Ops) take(ctx context.Context, sel Selector, hold time.Duration) ([]Item, error) {
	var picked []Item
	for _, s := range sel.stages() {
		items, err := o.scan(ctx, s, hold)
		var rest []Item
		for _, it := range items {
			if sel.match(it) {
				picked = append(picked, it)
			} else {
				rest = append(rest, it)
			}
		}
		o.release(ctx, rest)
		if err != nil {
			o.release(ctx, picked)
			return nil, err
		}
	}
	if len(picked) == 0 {
		return nil, ErrNotInDLQ
	}
	return picked, nil
}

func (o *Ops) delete(ctx context.Context, it Item) error {
	_, err := o.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(o.Queues.DLQ[it.Stage]), ReceiptHandle: aws.String(it.receiptHandle)})
	if err != nil {
		return fmt.Errorf("delete from %s dead-letter queue: %w", it.Stage, err)
	}
	return nil
}

func (o *Ops) audit(ctx context.Context, it Item, state string) error {
	b, err := json.Marshal(it.Envelope)
	if err != nil {
		return err
	}
	return o.Jobs.RecordDeadLetter(ctx, store.DeadLetterRecord{EnvelopeID: it.Envelope.ID, JobID: job.ID(it.Envelope.JobID), Stage: it.Stage,
		ErrorClass: it.Envelope.ErrorClass, State: state, Envelope: b, UpdatedAt: o.Now().UTC()})
}

func receiveCount(m sqstypes.Message) int {
	n, _ := strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
	return n
}

func sentAt(m sqstypes.Message) time.Time {
	ms, _ := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	return time.UnixMilli(ms).UTC()
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:24]
}
