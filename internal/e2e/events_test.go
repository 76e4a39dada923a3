package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/inbound"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/vote"
	"github.com/criticizer/criticizer/internal/wire"
)

// Every sample in events/ (the ones `sam local invoke -e` and
// `make invoke-<fn>` use) is fed, as raw JSON, through the Lambda runtime's
// own handler wrapper to the function it is for, in pipeline order, and each
// step's effect is checked in DynamoDB and the SES store.
func TestSampleEvents_DriveEachFunction(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	cfg, _ := config.FromEnv(func(string) string { return "" })
	cfg.Endpoints, cfg.WebhookSecret = env.Endpoints, devstack.LocalGenericSecret
	// One invocation per sample, with no runner to defer a RATE_LIMITED
	// answer: the send-rate limiter, which gives a slot up when DynamoDB
	// Local answers late under a loaded machine, is tested elsewhere
	// (ratelimit_test.go) and is off here.
	cfg.Notify.MaxSendRate = 0
	res.Apply(&cfg)
	var logs strings.Builder
	log := obs.NewLogger(&syncWriter{w: &logs}, "info")
	ctx := context.Background()
	a, err := wire.NewBase(ctx, cfg, log, wire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	invoke := func(fn, file string, edit ...func([]byte) []byte) []byte {
		t.Helper()
		payload, err := os.ReadFile("../../events/" + file)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range edit {
			payload = e(payload)
		}
		h, err := devstack.Handler(ctx, fn, cfg, res, log, wire.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := lambda.NewHandler(h).Invoke(ctx, payload)
		if err != nil {
			t.Fatalf("%s(%s): %v", fn, file, err)
		}
		return out
	}
	noFailures := func(fn string, out []byte) {
		t.Helper()
		var r events.SQSEventResponse
		if err := json.Unmarshal(out, &r); err != nil || len(r.BatchItemFailures) != 0 {
			t.Fatalf("%s: response %s: want no batch item failures", fn, out)
		}
	}
	id := job.NewID("generic", "billing-1042", 1)
	stageIs := func(want job.Stage) {
		t.Helper()
		j, err := a.Jobs.Get(ctx, id)
		if err != nil || j.Stage != want {
			t.Fatalf("job stage %q (%v), want %q", j.Stage, err, want)
		}
	}

	var resp events.APIGatewayV2HTTPResponse
	_ = json.Unmarshal(invoke("intake", "intake-webhook.json"), &resp)
	if resp.StatusCode != 202 || !strings.Contains(resp.Body, string(id)) {
		t.Fatalf("intake: %d %s", resp.StatusCode, resp.Body)
	}
	stageIs(job.StageFetch)
	noFailures("fetch", invoke("fetch", "fetch-sqs.json"))
	stageIs(job.StageLLM)
	noFailures("llm", invoke("llm", "llm-sqs.json"))
	stageIs(job.StageNotify)
	before, _ := env.SES.Emails(ctx)
	noFailures("notify", invoke("notify", "notify-sqs.json"))
	stageIs(job.StageDone)
	after, _ := env.SES.Emails(ctx)
	if len(after)-len(before) != 2 {
		t.Fatalf("notify sent %d emails, want 2", len(after)-len(before))
	}
	did := delivery.ID(job.ChangelistKey("generic", "billing-1042"), "reviewer1@example.com", 1)
	sent, err := a.Deliveries.Get(ctx, did)
	if err != nil {
		t.Fatal(err)
	}
	// The sample's event names a message id of its own; an event is
	// evidence only for the row's own message (another one would be a
	// duplicate send), so it is given the id SES gave this send.
	const sampleMessageID = "010001900000abcd-11111111-2222-3333-4444-555555555555-000000"
	noFailures("feedback", invoke("feedback", "feedback-sqs.json", func(b []byte) []byte {
		return []byte(strings.ReplaceAll(string(b), sampleMessageID, sent.NotificationID))
	}))
	row, err := a.Deliveries.Get(ctx, did)
	if err != nil || row.Status != delivery.StatusDelivered || row.DeliveredAt.IsZero() {
		t.Fatalf("after the feedback event the row is %q (%v), want delivered", row.Status, err)
	}
	var rep map[string]int
	if err := json.Unmarshal(invoke("sweeper", "sweeper-schedule.json"), &rep); err != nil || rep["jobs_requeued"] != 0 {
		t.Fatalf("sweeper report %v %v", rep, err)
	}

	// A reply to reviewer1's email, as SES stored it and notified it:
	// "wrong 1" is recorded, and its confirmation's row written for
	// notify's reply task. The sample's reply address is keyed with the
	// local stack's key under its inbound domain (make run's).
	cfg.UnsubscribeKey, cfg.InboundDomain = devstack.LocalUnsubscribeKey, "replies.localhost"
	const sampleReplyID = "sample0reply0000000000000000000000000001"
	raw, err := os.ReadFile("../../events/reply-message.eml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Clients.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(res.PayloadBucket),
		Key: aws.String(inbound.ObjectPrefix + sampleReplyID), Body: bytes.NewReader(raw)}); err != nil {
		t.Fatal(err)
	}
	noFailures("reply", invoke("reply", "reply-sqs.json", func(b []byte) []byte {
		return []byte(strings.ReplaceAll(string(b), "criticizer-payloads", res.PayloadBucket))
	}))
	confirm, err := a.Deliveries.Get(ctx, delivery.ReplyIDOf("reviewer1@example.com", "<sample-reply-1@example.com>"))
	if err != nil || confirm.Kind != delivery.KindReply || confirm.Status != delivery.StatusPending || confirm.Recipient != "reviewer1@example.com" {
		t.Fatalf("the reply's confirmation row: %+v (%v)", confirm, err)
	}
	if votes, err := dynamo.NewVotes(a.DynamoDB, cfg.JobsTable, nil).List(ctx); err != nil || len(votes) != 1 || votes[0].Choice != vote.Wrong {
		t.Fatalf("votes %+v (%v), want reviewer1's wrong on finding 1", votes, err)
	}
}
