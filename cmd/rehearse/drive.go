package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/webhook"
)

// review is the one review the rehearsal sends: the generic webhook's
// sample, to its two recipients.
const reviewFile = "events/generic-webhook.json"

// rehearse runs the whole rehearsal and returns what failed.
func rehearse(ctx context.Context, o options) ([]string, error) {
	tpl, err := devstack.LoadTemplate(o.template)
	if err != nil {
		return nil, err
	}
	body, err := os.ReadFile(reviewFile)
	if err != nil {
		return nil, err
	}
	var sample struct{ Recipients []string }
	if err := json.Unmarshal(body, &sample); err != nil {
		return nil, fmt.Errorf("%s: %w", reviewFile, err)
	}
	if err := os.RemoveAll(filepath.Join(o.dir, "logs")); err != nil {
		return nil, err
	}
	if failures := preflight(tpl); len(failures) > 0 {
		return failures, nil
	}
	// One after the other: on a busy machine DynamoDB Local's JVM does not
	// start within its minute beside the compiler.
	b, err := build(ctx, o)
	if err != nil {
		return nil, err
	}
	st, err := startStack(ctx, o, tpl)
	if err != nil {
		return nil, err
	}
	defer st.close()
	fns, failures := st.functions()
	if len(failures) > 0 {
		return failures, nil
	}
	r, err := startFunctions(ctx, o, st, b, fns)
	if err != nil {
		return nil, err
	}
	defer r.stop()

	secret, err := st.secretValue("WebhookSecret", "CRITICIZER_WEBHOOK_SECRET")
	if err != nil {
		return nil, err
	}
	o.step("POST /webhooks/generic, signed with the webhook secret the template generated")
	httpAPI := devstack.HTTPAPI(r.api)
	status, answer := call(ctx, httpAPI, http.MethodPost, "/webhooks/generic", body, map[string]string{
		"Content-Type": "application/json", "Idempotency-Key": "rehearse-1", webhook.SignatureHeader: webhook.Sign([]byte(secret), body)})
	if status != http.StatusAccepted {
		return append(r.failed(), fmt.Sprintf("IntakeFunction: POST /webhooks/generic answered %d: %s", status, answer)), nil
	}
	var acc api.Accepted
	if err := json.Unmarshal(answer, &acc); err != nil || acc.Links.Self == "" {
		return nil, fmt.Errorf("IntakeFunction: the 202 answer has no job link: %s", answer)
	}
	self, err := url.Parse(acc.Links.Self)
	if err != nil {
		return nil, err
	}

	o.step("waiting for job %s: succeeded, every delivery delivered (SES events through SNS, SQS, feedback)", acc.JobID)
	job, done := waitJob(ctx, o, r, httpAPI, self.RequestURI())
	if !done {
		failures := r.failed()
		failures = append(failures, fmt.Sprintf("job %s: %q at stage %q after %s, deliveries %+v, last error %+v",
			acc.JobID, job.Status, job.Stage, time.Since(o.start).Round(time.Second), job.Deliveries, job.LastError))
		failures = append(failures, r.functionErrors()...)
		more, err := check(ctx, st, sample.Recipients, nil)
		return append(failures, more...), err
	}

	o.step("invoking the sweeper with a scheduled event")
	event, err := os.ReadFile("events/sweeper-schedule.json")
	if err != nil {
		return nil, err
	}
	if _, err := r.invoke(ctx, "sweeper", event); err != nil {
		return r.failed(), nil
	}
	if failures := replyStep(ctx, o, st, r, sample.Recipients[0]); len(failures) > 0 {
		return failures, nil
	}
	return check(ctx, st, sample.Recipients, r)
}

// replyStep replies "wrong 1" to the first recipient's email, as SES's
// receipt rule receives it (the local SMTP listener: the raw message to
// the bucket, the notification through the inbound topic to the reply
// queue, which the template's event source mapping polls into the reply
// function under RIE), and waits for the vote in the jobs table and the
// one confirmation notify sends.
func replyStep(ctx context.Context, o options, st *stack, r *running, to string) []string {
	ses := &devstack.SESEmulator{BaseURL: st.svc.Ports.SESURL()}
	emails, err := ses.Emails(ctx)
	if err != nil {
		return []string{err.Error()}
	}
	var e *devstack.StoredEmail
	for i := range emails {
		if slices.Contains(emails[i].Destination.To, to) {
			e = &emails[i]
		}
	}
	if e == nil || len(e.ReplyTo) != 1 || !strings.HasSuffix(e.ReplyTo[0], "@"+inboundDomain) {
		return []string{fmt.Sprintf("NotifyFunction: the email to %s has no reply address at %s (Reply-To %v): CRITICIZER_INBOUND_DOMAIN not given?", to, inboundDomain, replyTo(e))}
	}
	in := &devstack.Inbound{Domain: inboundDomain, S3: st.clients.S3, Bucket: st.res.PayloadBucket, Prefix: deploy.InboundPrefix,
		SNS: st.clients.SNS, TopicARN: st.res.InboundTopicARN, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := in.Start("127.0.0.1:0"); err != nil {
		return []string{err.Error()}
	}
	defer in.Close()
	o.step("replying 'wrong 1' as %s over SMTP to %s", to, in.Addr())
	if err := smtp.SendMail(in.Addr(), nil, to, e.ReplyTo, devstack.ReplyMessage(to, *e, "wrong 1")); err != nil {
		return []string{"SMTP: " + err.Error()}
	}
	votes := dynamo.NewVotes(st.clients.DynamoDB, st.res.JobsTable, nil)
	deadline := time.Now().Add(o.wait)
	for len(r.failed()) == 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		vs, _ := votes.List(ctx)
		emails, _ := ses.Emails(ctx)
		confirmations := 0
		for _, m := range emails {
			if strings.HasPrefix(m.Subject, "Re: ") && slices.Contains(m.Destination.To, to) {
				confirmations++
			}
		}
		if len(vs) == 1 && confirmations == 1 {
			o.step("the reply's vote is recorded and its confirmation sent")
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return append(append(r.failed(), fmt.Sprintf("ReplyFunction: the reply of %s was not recorded and confirmed once within %s", to, o.wait)), r.functionErrors()...)
}

func replyTo(e *devstack.StoredEmail) []string {
	if e == nil {
		return nil
	}
	return e.ReplyTo
}

// waitJob polls the job through the API until it succeeded with every
// delivery delivered (SES's events through SNS, SQS and feedback), ended
// otherwise (dead-lettered, needs intervention), a function failed, or
// o.wait ran out; done says it succeeded.
func waitJob(ctx context.Context, o options, r *running, h http.Handler, target string) (api.JobView, bool) {
	var job api.JobView
	deadline := time.Now().Add(o.wait)
	for len(r.failed()) == 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		var v api.JobView
		if status, answer := call(ctx, h, http.MethodGet, target, nil, nil); status == http.StatusOK && json.Unmarshal(answer, &v) == nil {
			job = v
		}
		switch job.Status {
		case "dead_lettered", "needs_intervention":
			return job, false
		case "succeeded":
			if len(job.Deliveries) > 0 && !slices.ContainsFunc(job.Deliveries, func(d api.DeliveryView) bool { return d.Status != "delivered" }) {
				return job, true
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return job, false
}

// check is the verdict: exactly one email per recipient, every
// dead-letter queue empty, no function error.
func check(ctx context.Context, st *stack, recipients []string, r *running) ([]string, error) {
	var failures []string
	if r != nil {
		failures = r.failed()
	}
	emails, err := (&devstack.SESEmulator{BaseURL: st.svc.Ports.SESURL()}).Emails(ctx)
	if err != nil {
		return nil, err
	}
	got := map[string]int{}
	for _, e := range emails {
		if strings.HasPrefix(e.Subject, "Re: ") {
			continue // a reply's confirmation (replyStep)
		}
		for _, to := range e.Destination.To {
			got[strings.ToLower(to)]++
		}
	}
	for _, rc := range recipients {
		if n := got[strings.ToLower(rc)]; n != 1 {
			failures = append(failures, fmt.Sprintf("NotifyFunction: %s has %d emails in the SES emulator, want exactly 1", rc, n))
		}
	}
	for _, id := range deadLetterQueues(st) {
		url := st.values.Resources[id].Ref
		out, err := st.clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		for k, v := range out.Attributes {
			if v != "0" {
				failures = append(failures, fmt.Sprintf("queue %s (%s): %s = %s, want an empty dead-letter queue", id, url, k, v))
			}
		}
	}
	return failures, nil
}

// deadLetterQueues are the template's queues that another queue's
// RedrivePolicy names as its dead-letter target.
func deadLetterQueues(st *stack) []string {
	var out []string
	for _, id := range st.tpl.Resources("AWS::SQS::Queue") {
		n := st.tpl.Property(id, "RedrivePolicy", "deadLetterTargetArn")
		if n == nil {
			continue
		}
		arn, err := st.tpl.Eval(n, st.values)
		if err != nil {
			continue
		}
		for dlq, r := range st.values.Resources {
			if r.Attrs["Arn"] == arn {
				out = append(out, dlq)
			}
		}
	}
	slices.Sort(out)
	return out
}

// call sends one request through the HTTP API and returns its status and
// body.
func call(ctx context.Context, h http.Handler, method, target string, body []byte, headers map[string]string) (int, []byte) {
	req := httptest.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	req.Host = "rehearse.execute-api.us-east-1.amazonaws.com"
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}
