package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/queue"
)

// SQSProxy stands in front of fauxqs on the SQS (and SNS, S3) port and
// makes it answer like SQS where fauxqs does not (docs/local-stack.md):
//
//   - StartMessageMoveTask, ListMessageMoveTasks and CancelMessageMoveTask,
//     which fauxqs lacks, run a DLQ redrive (MoveMessages): every moved
//     message is a new one, with a new MessageId and SentTimestamp, as AWS
//     documents. So `aws sqs start-message-move-task --endpoint-url ...`
//     and the SDK's calls work locally as they do on AWS.
//   - GetQueueAttributes reports ApproximateNumberOfMessages,
//     ApproximateNumberOfMessagesNotVisible and
//     ApproximateNumberOfMessagesDelayed as of the call. fauxqs moves an
//     in-flight message whose visibility timeout ran out, or a delayed
//     message whose delay passed, back to the visible messages only when
//     someone receives from that queue; until then its counters still call
//     the message in flight or delayed. The proxy counts from fauxqs's
//     inspection endpoint (/_fauxqs/queues/NAME), with the clock.
//
// Everything else passes through untouched, the Host header included
// (fauxqs builds queue URLs from it, so they name the proxy's port).
// Hand-written: it is the smallest piece that gives the protocol's tests
// SQS's documented answers, and no maintained emulator we can install has
// both (fauxqs 2.4.1 has no move task either).
type SQSProxy struct {
	upstream *url.URL
	sqs      *sqs.Client // to fauxqs itself, for the move tasks
	http     *http.Client
	proxy    *httputil.ReverseProxy
	log      *slog.Logger
	tasks    moveTasks
	ctx      context.Context
	stop     context.CancelFunc
}

// NewSQSProxy returns a proxy in front of the fauxqs at upstream
// (http://127.0.0.1:PORT).
func NewSQSProxy(upstream string, log *slog.Logger) (*SQSProxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("fauxqs url: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &SQSProxy{upstream: u, http: &http.Client{Timeout: 10 * time.Second}, log: log, ctx: ctx, stop: stop,
		sqs: queue.NewSQS(awsclient.ForFunction(config.Endpoints{SQS: upstream}), upstream)}
	// Every poller long-polls through the proxy: keep a connection per
	// caller rather than http.DefaultTransport's two idle ones per host,
	// which would open (and leave in TIME_WAIT) a connection per call.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 0, 1024
	p.proxy = &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host
		},
		ModifyResponse: p.fixCounters,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return p, nil
}

// Close stops the move tasks under way.
func (p *SQSProxy) Close() {
	p.stop()
	p.tasks.close()
}

type ctxQueueURL struct{}

// ServeHTTP answers the calls fauxqs gets wrong and forwards the rest.
func (p *SQSProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, "AmazonSQS.")
	if !ok || r.Method != http.MethodPost {
		p.proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 2<<20))
	if err != nil {
		sqsError(w, http.StatusBadRequest, "InvalidParameterValue", "unreadable request body")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	switch op {
	case "StartMessageMoveTask":
		p.startMoveTask(w, r.Context(), body)
	case "ListMessageMoveTasks":
		p.listMoveTasks(w, r.Context(), body)
	case "CancelMessageMoveTask":
		p.cancelMoveTask(w, body)
	case "GetQueueAttributes":
		var in struct{ QueueUrl string }
		_ = json.Unmarshal(body, &in)
		p.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxQueueURL{}, in.QueueUrl)))
	default:
		p.proxy.ServeHTTP(w, r)
	}
}

// counterNames are the attributes the proxy recounts.
var counterNames = []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"}

// fixCounters replaces fauxqs's approximate counters in a
// GetQueueAttributes answer with the state as of now.
func (p *SQSProxy) fixCounters(resp *http.Response) error {
	qurl, _ := resp.Request.Context().Value(ctxQueueURL{}).(string)
	if qurl == "" || resp.StatusCode != http.StatusOK {
		return nil
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	out := raw
	var ans struct {
		Attributes map[string]string `json:"Attributes"`
	}
	if json.Unmarshal(raw, &ans) == nil && hasCounter(ans.Attributes) {
		if c, err := p.counters(resp.Request.Context(), queueName(qurl)); err == nil {
			for _, name := range counterNames {
				if _, ok := ans.Attributes[name]; ok {
					ans.Attributes[name] = strconv.Itoa(c[name])
				}
			}
			out, _ = json.Marshal(ans)
		} else {
			p.log.Warn("could not recount a queue; fauxqs's own counters returned", "queue", queueName(qurl), "error", err)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

func hasCounter(attrs map[string]string) bool {
	for _, n := range counterNames {
		if _, ok := attrs[n]; ok {
			return true
		}
	}
	return false
}

// counters counts a queue's messages as SQS would now: a message whose
// visibility timeout or delay has run out is visible.
func (p *SQSProxy) counters(ctx context.Context, name string) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.upstream.JoinPath("_fauxqs", "queues", name).String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fauxqs inspection: HTTP %d", resp.StatusCode)
	}
	var q struct {
		Messages struct {
			Ready   []json.RawMessage `json:"ready"`
			Delayed []struct {
				DelayUntil int64 `json:"delayUntil"`
			} `json:"delayed"`
			Inflight []struct {
				VisibilityDeadline int64 `json:"visibilityDeadline"`
			} `json:"inflight"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&q); err != nil {
		return nil, fmt.Errorf("fauxqs inspection: %w", err)
	}
	now := time.Now().UnixMilli()
	c := map[string]int{counterNames[0]: len(q.Messages.Ready)}
	for _, d := range q.Messages.Delayed {
		if d.DelayUntil > now {
			c["ApproximateNumberOfMessagesDelayed"]++
		} else {
			c["ApproximateNumberOfMessages"]++
		}
	}
	for _, f := range q.Messages.Inflight {
		if f.VisibilityDeadline > now {
			c["ApproximateNumberOfMessagesNotVisible"]++
		} else {
			c["ApproximateNumberOfMessages"]++
		}
	}
	return c, nil
}

// startMoveTask answers StartMessageMoveTask.
func (p *SQSProxy) startMoveTask(w http.ResponseWriter, ctx context.Context, body []byte) {
	var in struct {
		SourceArn                    string
		DestinationArn               string
		MaxNumberOfMessagesPerSecond *int32
	}
	if err := json.Unmarshal(body, &in); err != nil || in.SourceArn == "" {
		sqsError(w, http.StatusBadRequest, "MissingParameter", "The request must contain the parameter SourceArn.")
		return
	}
	if r := in.MaxNumberOfMessagesPerSecond; r != nil && (*r < 1 || *r > 500) {
		sqsError(w, http.StatusBadRequest, "InvalidParameterValue", "MaxNumberOfMessagesPerSecond must be from 1 to 500.")
		return
	}
	srcURL, err := p.queueURL(ctx, in.SourceArn)
	if err != nil {
		sqsError(w, http.StatusBadRequest, "ResourceNotFoundException", "The resource that you specified for the SourceArn parameter doesn't exist.")
		return
	}
	sources, err := p.sourcesOf(ctx, in.SourceArn)
	if err != nil {
		sqsError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	if len(sources) == 0 {
		sqsError(w, http.StatusBadRequest, "UnsupportedOperation", "Source queue must be configured as a Dead Letter Queue.")
		return
	}
	dest := in.DestinationArn
	if dest == "" {
		if len(sources) > 1 {
			// SQS returns each message to the queue it came from; fauxqs
			// does not record that, so the local stack needs it named.
			sqsError(w, http.StatusBadRequest, "UnsupportedOperation",
				"the local stack cannot tell which of several source queues a message came from: set DestinationArn")
			return
		}
		dest = sources[0]
	}
	destURL, err := p.queueURL(ctx, dest)
	if err != nil {
		sqsError(w, http.StatusBadRequest, "ResourceNotFoundException", "The resource that you specified for the DestinationArn parameter doesn't exist.")
		return
	}
	c, err := p.counters(ctx, queueName(in.SourceArn))
	if err != nil {
		sqsError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	t := &moveTask{handle: taskHandle(in.SourceArn), source: in.SourceArn, dest: in.DestinationArn,
		perSecond: aws.ToInt32(in.MaxNumberOfMessagesPerSecond), toMove: int64(c["ApproximateNumberOfMessages"]),
		fromURL: srcURL, destURL: destURL}
	if err := p.tasks.start(p.ctx, p.sqs, t); err != nil {
		sqsError(w, http.StatusBadRequest, "UnsupportedOperation", err.Error())
		return
	}
	p.log.Info("message move task started", "source", in.SourceArn, "destination", dest, "to_move", t.toMove)
	sqsAnswer(w, map[string]any{"TaskHandle": t.handle})
}

// listMoveTasks answers ListMessageMoveTasks.
func (p *SQSProxy) listMoveTasks(w http.ResponseWriter, ctx context.Context, body []byte) {
	var in struct {
		SourceArn  string
		MaxResults *int
	}
	if err := json.Unmarshal(body, &in); err != nil || in.SourceArn == "" {
		sqsError(w, http.StatusBadRequest, "MissingParameter", "The request must contain the parameter SourceArn.")
		return
	}
	n := 1
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 10 {
			sqsError(w, http.StatusBadRequest, "InvalidParameterValue", "MaxResults must be from 1 to 10.")
			return
		}
		n = *in.MaxResults
	}
	if _, err := p.queueURL(ctx, in.SourceArn); err != nil {
		sqsError(w, http.StatusBadRequest, "ResourceNotFoundException", "The resource that you specified for the SourceArn parameter doesn't exist.")
		return
	}
	results := p.tasks.list(in.SourceArn, n)
	if results == nil {
		results = []map[string]any{}
	}
	sqsAnswer(w, map[string]any{"Results": results})
}

// cancelMoveTask answers CancelMessageMoveTask.
func (p *SQSProxy) cancelMoveTask(w http.ResponseWriter, body []byte) {
	var in struct{ TaskHandle string }
	if err := json.Unmarshal(body, &in); err != nil || in.TaskHandle == "" {
		sqsError(w, http.StatusBadRequest, "MissingParameter", "The request must contain the parameter TaskHandle.")
		return
	}
	moved, err := p.tasks.cancelTask(in.TaskHandle)
	if errors.Is(err, errNoSuchTask) {
		sqsError(w, http.StatusBadRequest, "ResourceNotFoundException", err.Error())
		return
	}
	sqsAnswer(w, map[string]any{"ApproximateNumberOfMessagesMoved": moved})
}

// queueURL finds a queue's URL from its ARN.
func (p *SQSProxy) queueURL(ctx context.Context, arn string) (string, error) {
	out, err := p.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queueName(arn))})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.QueueUrl), nil
}

// sourcesOf lists the ARNs of the queues whose redrive policy names dlqARN.
func (p *SQSProxy) sourcesOf(ctx context.Context, dlqARN string) ([]string, error) {
	var out []string
	pg := sqs.NewListQueuesPaginator(p.sqs, &sqs.ListQueuesInput{})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, u := range page.QueueUrls {
			a, err := p.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u),
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy, sqstypes.QueueAttributeNameQueueArn}})
			if err != nil {
				continue // deleted meanwhile
			}
			var rp struct {
				DeadLetterTargetArn string `json:"deadLetterTargetArn"`
			}
			if json.Unmarshal([]byte(a.Attributes["RedrivePolicy"]), &rp) == nil && rp.DeadLetterTargetArn == dlqARN {
				out = append(out, a.Attributes["QueueArn"])
			}
		}
	}
	return out, nil
}

func sqsAnswer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(v)
}

// sqsError writes an error as SQS's JSON protocol does.
func sqsError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + code, "message": msg})
}
