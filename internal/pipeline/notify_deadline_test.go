package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/awsclient/profile"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/store/dynamo"
)

// slowSender is SES answering just as the invocation's deadline passes: it
// accepted the message, and its answer (the message id) arrives at the
// deadline.
type slowSender struct {
	until time.Time
	sent  int
}

func (s *slowSender) Send(context.Context, string, string, delivery.Message) (string, error) {
	time.Sleep(time.Until(s.until))
	s.sent++
	return "ses-accepted-1", nil
}

// deliveriesTable is a deliveries table on DynamoDB Local. (testenv provisions
// through devstack, which imports this package: the table is made here.)
func deliveriesTable(t *testing.T) *dynamo.Deliveries {
	t.Helper()
	if os.Getenv("CRITICIZER_TEST_STACK") == "" {
		if os.Getenv("CRITICIZER_REQUIRE_STACK") != "" {
			t.Fatal("needs the local stack")
		}
		t.Skip("needs the local stack: run `make test`")
	}
	ctx := context.Background()
	ep := config.EndpointsFromEnv(os.Getenv)
	awsCfg, err := profile.Load(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	db := dynamo.NewClient(awsCfg, ep.DynamoDB)
	table := fmt.Sprintf("pipeline-%d-deliveries", time.Now().UnixNano())
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(table),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("delivery_id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("delivery_id"), KeyType: ddbtypes.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	return dynamo.NewDeliveries(db, table, nil)
}

func pendingRow(t *testing.T, d *dynamo.Deliveries, id string) delivery.Row {
	t.Helper()
	now := time.Now().UTC()
	r, _, err := d.Ensure(context.Background(), delivery.Row{ID: id, JobID: "j_n", Recipient: "r@example.com",
		Status: delivery.StatusPending, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Regression: MarkSent ran on the invocation's context, so an SES answer
// that arrived at the deadline was thrown away — the row stayed `sending`
// and went down the lost-answer path, which ended in a resend. The mark now
// runs on a context that outlives the invocation's, and the message id is
// written.
// Rules: R-OUTBOX-7.
func TestNotify_MarkSurvivesTheInvocationsDeadline(t *testing.T) {
	d := deliveriesTable(t)
	r := pendingRow(t, d, "d_deadline")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	snd := &slowSender{until: deadline.Add(10 * time.Millisecond)}
	n := &Notify{Base: Base{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now}, Deliveries: d, Sender: snd,
		Lease: time.Minute, Margin: time.Minute}
	got, err := n.deliver(ctx, r, &evidenceView{n: n})
	if err != nil {
		t.Fatalf("deliver: %v", err)
	}
	if got.Status != delivery.StatusSent || got.NotificationID != "ses-accepted-1" || snd.sent != 1 {
		t.Fatalf("row %s notification_id %q after %d sends; want sent with the provider's id", got.Status, got.NotificationID, snd.sent)
	}
}

// A send is not started when the invocation has no time left to mark it:
// nothing is claimed, and the message is deferred (RATE_LIMITED, not
// charged to the budget).
// Rules: R-OUTBOX-7.
func TestNotify_NoSendWithoutTimeToMark(t *testing.T) {
	d := deliveriesTable(t)
	r := pendingRow(t, d, "d_late")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	snd := &slowSender{}
	n := &Notify{Base: Base{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now}, Deliveries: d, Sender: snd, Lease: time.Minute}
	_, err := n.deliver(ctx, r, &evidenceView{n: n})
	if retry.Classify(err).Class != retry.RateLimited || snd.sent != 0 {
		t.Fatalf("deliver: %v after %d sends; want RATE_LIMITED and no send", err, snd.sent)
	}
	if got, _ := d.Get(context.Background(), "d_late"); got.Status != delivery.StatusPending {
		t.Fatalf("row %s; want it left pending (never claimed)", got.Status)
	}
}
