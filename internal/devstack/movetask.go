package devstack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// MoveMessages moves up to limit messages (all when limit ≤ 0) from the
// queue at sourceURL to the queue at destURL the way SQS's dead-letter
// queue redrive does (StartMessageMoveTask, the console's "Start DLQ
// redrive"): oldest first, each sent to the destination with the same body
// and message attributes, and deleted from the source only once sent. AWS
// documents that every redriven message is a new message: a new MessageId
// and a new enqueue time (SentTimestamp), and its receive count starts
// again; SendMessage gives exactly that. perSecond > 0 caps the rate, as
// MaxNumberOfMessagesPerSecond does. It returns how many it moved.
//
// fauxqs has no move task: the local stack's SQS proxy answers
// StartMessageMoveTask with this. Tests call it directly, or the real API
// through the proxy (Redrive).
func MoveMessages(ctx context.Context, c *sqs.Client, sourceURL, destURL string, limit int64, perSecond int32) (int64, error) {
	var moved int64
	start := time.Now()
	for limit <= 0 || moved < limit {
		n := int32(10)
		if limit > 0 {
			n = int32(min(10, limit-moved))
		}
		if perSecond > 0 {
			n = min(n, perSecond)
			// Keep the average at or below perSecond.
			if wait := time.Duration(float64(moved)/float64(perSecond)*float64(time.Second)) - time.Since(start); wait > 0 {
				sleep(ctx, wait)
			}
		}
		if err := ctx.Err(); err != nil {
			return moved, err
		}
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(sourceURL), MaxNumberOfMessages: n,
			VisibilityTimeout: 30, MessageAttributeNames: []string{"All"}})
		if err != nil {
			return moved, fmt.Errorf("receive from %s: %w", sourceURL, err)
		}
		if len(out.Messages) == 0 {
			return moved, nil
		}
		for _, m := range out.Messages {
			if ctx.Err() != nil {
				// The rest of this receive return after its visibility timeout.
				return moved, ctx.Err()
			}
			// A message is moved whole: a cancel between its send and its
			// delete would leave it in both queues.
			mctx := context.WithoutCancel(ctx)
			if _, err := c.SendMessage(mctx, &sqs.SendMessageInput{QueueUrl: aws.String(destURL), MessageBody: m.Body,
				MessageAttributes: m.MessageAttributes}); err != nil {
				return moved, fmt.Errorf("send to %s: %w", destURL, err)
			}
			if _, err := c.DeleteMessage(mctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(sourceURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				// Sent but not deleted: it would be moved twice, as a move
				// task interrupted at this point would.
				return moved, fmt.Errorf("delete from %s: %w", sourceURL, err)
			}
			moved++
		}
	}
	return moved, nil
}

// Redrive starts SQS's message move task from the dead-letter queue
// dlqARN back to its source queue (StartMessageMoveTask) and waits until
// it ends, as an operator's `aws sqs start-message-move-task` does. It
// works against AWS and against the local stack's SQS proxy alike, and
// returns how many messages the task moved.
func Redrive(ctx context.Context, c *sqs.Client, dlqARN string) (int64, error) {
	start, err := c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN)})
	if err != nil {
		return 0, fmt.Errorf("start message move task: %w", err)
	}
	for {
		out, err := c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqARN), MaxResults: aws.Int32(10)})
		if err != nil {
			return 0, fmt.Errorf("list message move tasks: %w", err)
		}
		var task *sqstypes.ListMessageMoveTasksResultEntry
		for i, r := range out.Results {
			// Only a running task shows its handle; the newest is first.
			if aws.ToString(r.TaskHandle) == aws.ToString(start.TaskHandle) || (task == nil && i == 0) {
				task = &out.Results[i]
			}
		}
		if task == nil {
			return 0, errors.New("the move task is not listed")
		}
		switch aws.ToString(task.Status) {
		case "COMPLETED":
			return task.ApproximateNumberOfMessagesMoved, nil
		case "FAILED", "CANCELLED":
			return task.ApproximateNumberOfMessagesMoved, fmt.Errorf("move task %s: %s", aws.ToString(task.Status), aws.ToString(task.FailureReason))
		}
		select {
		case <-ctx.Done():
			return task.ApproximateNumberOfMessagesMoved, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// moveTasks are the message move tasks the SQS proxy runs, by source ARN,
// oldest first.
type moveTasks struct {
	mu    sync.Mutex
	bySrc map[string][]*moveTask
	wg    sync.WaitGroup
}

// moveTask is one task, as ListMessageMoveTasks shows it.
type moveTask struct {
	handle           string
	source, dest     string // ARNs; dest "" when the request named none
	perSecond        int32
	started          time.Time
	cancel           context.CancelFunc
	done             chan struct{}
	mu               sync.Mutex
	status, failure  string
	moved, toMove    int64
	destURL, fromURL string
}

// taskHandle builds a handle in AWS's shape (base64 of a small JSON
// document naming the task and its source).
func taskHandle(source string) string {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	b, _ := json.Marshal(map[string]string{"taskId": hex.EncodeToString(id), "sourceArn": source})
	return base64.StdEncoding.EncodeToString(b)
}

// running returns the source's running task, if any.
func (t *moveTasks) running(source string) *moveTask {
	for _, m := range t.bySrc[source] {
		m.mu.Lock()
		st := m.status
		m.mu.Unlock()
		if st == "RUNNING" || st == "CANCELLING" {
			return m
		}
	}
	return nil
}

// start runs a task; only one may run per source queue.
func (t *moveTasks) start(ctx context.Context, c *sqs.Client, m *moveTask) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bySrc == nil {
		t.bySrc = map[string][]*moveTask{}
	}
	if t.running(m.source) != nil {
		return errOneTaskPerQueue
	}
	tctx, cancel := context.WithCancel(ctx)
	m.cancel, m.done, m.status, m.started = cancel, make(chan struct{}), "RUNNING", time.Now()
	t.bySrc[m.source] = append(t.bySrc[m.source], m)
	if m.toMove == 0 {
		m.status = "COMPLETED"
		close(m.done)
		cancel()
		return nil
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer close(m.done)
		defer cancel()
		n, err := MoveMessages(tctx, c, m.fromURL, m.destURL, m.toMove, m.perSecond)
		m.mu.Lock()
		defer m.mu.Unlock()
		m.moved = n
		switch {
		case m.status == "CANCELLING":
			m.status = "CANCELLED"
		case err != nil:
			m.status, m.failure = "FAILED", err.Error()
		default:
			m.status = "COMPLETED"
		}
	}()
	return nil
}

var errOneTaskPerQueue = errors.New("only one active message movement task is supported per queue")

// list returns the source's newest tasks first, at most max.
func (t *moveTasks) list(source string, max int) []map[string]any {
	t.mu.Lock()
	tasks := append([]*moveTask(nil), t.bySrc[source]...)
	t.mu.Unlock()
	var out []map[string]any
	for i := len(tasks) - 1; i >= 0 && len(out) < max; i-- {
		m := tasks[i]
		m.mu.Lock()
		e := map[string]any{"Status": m.status, "SourceArn": m.source, "ApproximateNumberOfMessagesMoved": m.moved,
			"ApproximateNumberOfMessagesToMove": m.toMove, "StartedTimestamp": m.started.UnixMilli()}
		if m.status == "RUNNING" {
			e["TaskHandle"] = m.handle
		}
		if m.dest != "" {
			e["DestinationArn"] = m.dest
		}
		if m.perSecond > 0 {
			e["MaxNumberOfMessagesPerSecond"] = m.perSecond
		}
		if m.status == "FAILED" {
			e["FailureReason"] = m.failure
		}
		m.mu.Unlock()
		out = append(out, e)
	}
	return out
}

// cancelTask cancels a running task and returns how many it moved.
func (t *moveTasks) cancelTask(handle string) (int64, error) {
	t.mu.Lock()
	var found *moveTask
	for _, tasks := range t.bySrc {
		for _, m := range tasks {
			if m.handle == handle {
				found = m
			}
		}
	}
	t.mu.Unlock()
	if found == nil {
		return 0, errNoSuchTask
	}
	found.mu.Lock()
	if found.status != "RUNNING" {
		found.mu.Unlock()
		return 0, errNoSuchTask
	}
	found.status = "CANCELLING"
	found.mu.Unlock()
	found.cancel()
	<-found.done
	found.mu.Lock()
	defer found.mu.Unlock()
	return found.moved, nil
}

var errNoSuchTask = errors.New("no running message movement task has this handle")

// close stops every task and waits for them.
func (t *moveTasks) close() {
	t.mu.Lock()
	for _, tasks := range t.bySrc {
		for _, m := range tasks {
			m.cancel()
		}
	}
	t.mu.Unlock()
	t.wg.Wait()
}

// queueName is the last part of a queue's URL or ARN.
func queueName(urlOrARN string) string {
	urlOrARN = strings.TrimRight(urlOrARN, "/")
	if i := strings.LastIndexAny(urlOrARN, "/:"); i >= 0 {
		return urlOrARN[i+1:]
	}
	return urlOrARN
}
