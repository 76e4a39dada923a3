package dynamo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/awsclient/profile"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/testenv"
)

// What DynamoDB Local answers to a TransactWriteItems ClientRequestToken
// used again, recorded so that a change in the emulator shows up here
// (R-STORE-2). DynamoDB documents a 10-minute window in which a token
// reused after a success is answered as that success without writing,
// and reused with other parameters as IdempotentParameterMismatch; it
// does not document a token reused after a cancelled transaction.
// DynamoDB Local forgets a cancelled transaction's token: the same token
// again, with the same parameters or others, is a new transaction and is
// applied. AWS may answer otherwise (a replay of the cancellation, or
// IdempotentParameterMismatch); the store does not depend on either,
// because every retry it makes has a token of its own (see the next test).
func TestTransactWriteItems_TokenReusedAfterCancellation_DynamoDBLocal(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	db, table, ctx := env.Clients.DynamoDB, res.JobsTable, context.Background()
	pk := testenv.Prefix(t)
	tok := pk[:9] // "t" and 8 random hex digits: tokens are at most 36 characters
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}
	put := func(v string) {
		t.Helper()
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]types.AttributeValue{
			"pk": key["pk"], "v": &types.AttributeValueMemberS{Value: v}}}); err != nil {
			t.Fatal(err)
		}
	}
	del := func() {
		t.Helper()
		if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	value := func() string {
		t.Helper()
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Item == nil {
			return ""
		}
		return out.Item["v"].(*types.AttributeValueMemberS).Value
	}
	// create puts v only where no item exists.
	create := func(token, v string) string {
		t.Helper()
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(token),
			TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: &table,
				Item:                map[string]types.AttributeValue{"pk": key["pk"], "v": &types.AttributeValueMemberS{Value: v}},
				ConditionExpression: aws.String("attribute_not_exists(pk)")}}}})
		var canceled *types.TransactionCanceledException
		var mismatch *types.IdempotentParameterMismatchException
		switch {
		case err == nil:
			return "ok"
		case errors.As(err, &canceled):
			return "canceled:" + aws.ToString(canceled.CancellationReasons[0].Code)
		case errors.As(err, &mismatch):
			return "IdempotentParameterMismatch"
		}
		t.Fatalf("TransactWriteItems: %v", err)
		return ""
	}
	steps := []struct {
		what        string
		before      func()
		token, v    string
		want, value string
	}{
		{"cancelled by its condition", func() { put("old") }, tok + "-a", "new", "canceled:ConditionalCheckFailed", "old"},
		{"the same token and parameters once the condition holds: a new transaction", del, tok + "-a", "new", "ok", "new"},
		{"cancelled by its condition", func() { del(); put("old") }, tok + "-b", "one", "canceled:ConditionalCheckFailed", "old"},
		{"the same token with other parameters once the condition holds: a new transaction", del, tok + "-b", "two", "ok", "two"},
		// The documented window, for contrast.
		{"applied", del, tok + "-c", "three", "ok", "three"},
		{"the same token and parameters after a success: the success again, nothing written", func() { put("moved on") }, tok + "-c", "three", "ok", "moved on"},
		{"the same token with other parameters after a success", func() {}, tok + "-c", "four", "IdempotentParameterMismatch", "moved on"},
	}
	for i, s := range steps {
		s.before()
		if got := create(s.token, s.v); got != s.want {
			t.Errorf("step %d (%s): answered %s, want %s", i+1, s.what, got, s.want)
		}
		if got := value(); got != s.value {
			t.Errorf("step %d (%s): item holds %q, want %q", i+1, s.what, got, s.value)
		}
	}
}

// Regression: the store retried a transaction cancelled by a
// TransactionConflict by passing the same input again, and the SDK had
// filled the first call's ClientRequestToken into it, so the retry — a new
// transaction, since the cancelled one wrote nothing — carried a token
// DynamoDB had already answered with a cancellation. Now each attempt the
// store makes has a token of its own, and the SDK's retries of one call
// keep that call's token (R-STORE-2). Faults below the SDK, in front of
// DynamoDB Local: the first transaction is answered with DynamoDB's
// TransactionConflict cancellation; the second is applied by DynamoDB and
// then answered with a 500, which the SDK retries. The job is created
// once, and the SDK's retry is answered as a replay of its own success
// (a retry with another token would be a new transaction, cancelled by
// the items the first wrote: Create would answer Replayed, Rerun a
// conflict).
func TestTransactWriteItems_RetryAfterCancellationGetsAFreshToken(t *testing.T) {
	env := testenv.Stack(t)
	for _, op := range []string{"create", "rerun"} {
		t.Run(op, func(t *testing.T) {
			res := testenv.Provision(t, env)
			w := &txWire{}
			cfg, err := profile.Load(context.Background(), env.Endpoints, func(c *aws.Config) {
				w.next = c.HTTPClient
				if w.next == nil {
					w.next = http.DefaultClient
				}
				c.HTTPClient = w
			})
			if err != nil {
				t.Fatal(err)
			}
			s := dynamo.NewJobs(dynamo.NewClient(cfg, env.Endpoints.DynamoDB), res.JobsTable, nil)
			cl := testenv.Prefix(t)
			ctx := context.Background()
			var want job.ID
			reasons := 3
			if op == "rerun" {
				// The rerun's own transaction is the one under test.
				storetest.Create(t, s, storetest.NewJob(cl, 1), "k1", "b1")
				reasons = 2
			}
			w.arm(reasons)
			switch op {
			case "create":
				j := storetest.NewJob(cl, 1)
				got := storetest.Create(t, s, j, "k1", "b1")
				if got.Outcome != store.Created {
					t.Fatalf("create after a conflict: outcome %v, want Created", got.Outcome)
				}
				want = j.ID
			case "rerun":
				plan, err := s.PlanRerun(ctx, "generic", cl)
				if err != nil {
					t.Fatal(err)
				}
				j, err := s.Rerun(ctx, store.RerunRequest{Plan: plan, Reason: "test"})
				if err != nil {
					t.Fatalf("rerun after a conflict: %v", err)
				}
				want = j.ID
			}
			if got, err := s.Get(ctx, want); err != nil || got.ID != want {
				t.Fatalf("job %s after the retries: %v", want, err)
			}
			tokens := w.seen()
			if len(tokens) != 3 {
				t.Fatalf("%d TransactWriteItems exchanges (%v), want 3: the cancelled one, the applied one, the SDK's retry", len(tokens), tokens)
			}
			if tokens[0] == "" || tokens[0] == tokens[1] {
				t.Errorf("the store's retry after a cancellation carried token %q, the cancelled one's %q: want a fresh token", tokens[1], tokens[0])
			}
			if tokens[1] != tokens[2] {
				t.Errorf("the SDK's retry of one call carried token %q, the call's was %q: want the same", tokens[2], tokens[1])
			}
		})
	}
}

// txWire sits between the SDK and DynamoDB Local and scripts the answers
// to TransactWriteItems once armed: the first is DynamoDB's
// TransactionConflict cancellation (nothing reaches DynamoDB), the second
// reaches DynamoDB and is answered with a 500 (the work done), the rest
// pass. It records each exchange's ClientRequestToken.
type txWire struct {
	next    aws.HTTPClient
	mu      sync.Mutex
	armed   bool
	reasons int
	tokens  []string
}

func (w *txWire) arm(reasons int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed, w.reasons, w.tokens = true, reasons, nil
}

func (w *txWire) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.tokens...)
}

func (w *txWire) Do(req *http.Request) (*http.Response, error) {
	if req.Header.Get("X-Amz-Target") != "DynamoDB_20120810.TransactWriteItems" {
		return w.next.Do(req)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var in struct{ ClientRequestToken string }
	_ = json.Unmarshal(body, &in)
	w.mu.Lock()
	if !w.armed {
		w.mu.Unlock()
		return w.next.Do(req)
	}
	w.tokens = append(w.tokens, in.ClientRequestToken)
	n, reasons := len(w.tokens), w.reasons
	w.mu.Unlock()
	switch n {
	case 1:
		codes := make([]map[string]string, reasons)
		for i := range codes {
			codes[i] = map[string]string{"Code": "None"}
		}
		codes[reasons-1] = map[string]string{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
		b, _ := json.Marshal(map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
			"Message": "Transaction cancelled, please refer cancellation reasons for specific reasons", "CancellationReasons": codes})
		return dynamoAnswer(req, http.StatusBadRequest, b), nil
	case 2:
		resp, err := w.next.Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("the transaction under test failed at DynamoDB: HTTP %d", resp.StatusCode)
		}
		return dynamoAnswer(req, http.StatusInternalServerError,
			[]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error (injected after the work)"}`)), nil
	}
	return w.next.Do(req)
}

func dynamoAnswer(req *http.Request, status int, body []byte) *http.Response {
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-Requestid", "injected")
	return &http.Response{Status: http.StatusText(status), StatusCode: status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req}
}
