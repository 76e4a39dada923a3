package main

import (
	"context"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/critic/critictest"
	"github.com/criticizer/criticizer/internal/critic/openai"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/wire"
	"github.com/criticizer/criticizer/internal/wire/intake"
)

// The bench prices Lambda at the memory sizes the CDK app deploys, read
// from its source: every function under functions/ has one, and the
// access log line the app configures is filled in completely.
func TestReadDeployment_EveryFunctionHasItsMemorySize(t *testing.T) {
	d := describedDeployment()
	dirs, err := os.ReadDir("../../functions")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range dirs {
		if mb := d.MemoryMB[e.Name()]; mb < 128 || mb > 10240 {
			t.Errorf("function %s: deployed memory %d MB (want Lambda's 128–10240)", e.Name(), mb)
		}
	}
	if len(d.MemoryMB) != len(dirs) {
		t.Errorf("the deployment sizes %d functions, functions/ holds %d", len(d.MemoryMB), len(dirs))
	}
	if d.PayloadExpiryDays <= 0 {
		t.Errorf("payload expiry %d days", d.PayloadExpiryDays)
	}
	if l := accessLogLine(d.AccessLogFormat); strings.Contains(l, "$context") || !strings.HasPrefix(l, `{"requestId":"`) {
		t.Errorf("access log line not filled in: %s", l)
	}
}

// itemSize counts an item as DynamoDB bills it: a PutItem of an item of
// that size consumes one write unit per started KB.
func TestItemSize_MatchesConsumedCapacity(t *testing.T) {
	env := testenv.Stack(t)
	ctx := context.Background()
	table := testenv.Prefix(t) + "-size"
	db := env.Clients.DynamoDB
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(table), BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("k"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("k"), KeyType: ddbtypes.KeyTypeHash}}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{10, 900, 1000, 1030, 2500, 5000, 9000} {
		item := map[string]ddbtypes.AttributeValue{
			"k":   &ddbtypes.AttributeValueMemberS{Value: "key"},
			"s":   &ddbtypes.AttributeValueMemberS{Value: strings.Repeat("x", n)},
			"n":   &ddbtypes.AttributeValueMemberN{Value: "1234567"},
			"b":   &ddbtypes.AttributeValueMemberB{Value: []byte{1, 2, 3}},
			"m":   &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"a": &ddbtypes.AttributeValueMemberS{Value: "bc"}}},
			"l":   &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{&ddbtypes.AttributeValueMemberBOOL{Value: true}}},
			"set": &ddbtypes.AttributeValueMemberSS{Value: []string{"one", "two"}},
		}
		out, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item, ReturnConsumedCapacity: ddbtypes.ReturnConsumedCapacityTotal})
		if err != nil {
			t.Fatal(err)
		}
		want := math.Ceil(float64(itemSize(item)) / 1024)
		if got := aws.ToFloat64(out.ConsumedCapacity.CapacityUnits); got != want {
			t.Errorf("a %d-byte string: DynamoDB billed %v WRU, itemSize %d bytes says %v", n, got, itemSize(item), want)
		}
	}
}

// The counter (SDK middleware) and the capacity proxy (in front of
// DynamoDB Local, used for the Node peer) measure the same capacity for
// the same intake request: 12 write units for a generic webhook's
// transaction of three items and its live-index write.
func TestCapacity_MiddlewareAndProxyAgree(t *testing.T) {
	env := testenv.Stack(t)
	ctx := context.Background()
	log := obs.NewLogger(io.Discard, "warn")
	measureVia := func(proxied bool) float64 {
		res := testenv.Provision(t, env)
		cfg := benchConfig(t, env)
		res.Apply(&cfg)
		counter := NewCounter()
		var proxy *capacityProxy
		if proxied {
			var err error
			if proxy, err = startCapacityProxy(cfg.Endpoints.DynamoDB); err != nil {
				t.Fatal(err)
			}
			defer proxy.close()
			cfg.Endpoints.DynamoDB = proxy.URL
		}
		h, err := intake.New(ctx, cfg, log, wire.Options{AWS: []awsclient.Option{counter.Option(), quiet}})
		if err != nil {
			t.Fatal(err)
		}
		reqs := workload(testenv.Prefix(t), 1, 0, 1, []byte(benchSecret), 1)
		if got := runCriticizerIntake(ctx, h, counter, nil, reqs, 1); got.Errors != 0 {
			t.Fatalf("%d non-2xx answers", got.Errors)
		}
		if proxied {
			_, w, _ := proxy.take()
			return w
		}
		return counter.Snapshot()[callKey{Tag: "unique", Service: "DynamoDB", Op: "TransactWriteItems"}].WriteUnits
	}
	mw, px := measureVia(false), measureVia(true)
	if mw != px || mw < 6 {
		t.Fatalf("intake's transaction: middleware %v WRU, proxy %v WRU; want equal, and at least 6 (3 items, 2 units each)", mw, px)
	}
	t.Logf("a unique generic webhook's transaction consumed %v WRU (both ways)", mw)
}

// The sweep benchmark's two ways of sweeping find the same live items;
// the Scan reads the whole history, the indexes the live items only.
func TestSweep_IndexesAndScanFindTheSameLiveItems(t *testing.T) {
	env := testenv.Stack(t)
	cfg := benchConfig(t, env)
	o := sweepOptions{jobs: 120, rows: 300, live: 10, loader: 4, repeat: 1}
	s, err := runSweep(context.Background(), cfg, testenv.Prefix(t)[:9], o, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	if s.Index.Scanned > int64(2*o.live+2) {
		t.Errorf("the indexes read %d items for %d live ones", s.Index.Scanned, o.live)
	}
	if s.Scan.Scanned < int64(o.jobs+o.rows) {
		t.Errorf("the Scan read %d items, fewer than the %d of the history", s.Scan.Scanned, o.jobs+o.rows)
	}
}

// The bench's rerun figure is what the llm stage does: of a 20-file
// change pushed 5 times, 2 files changed per push, each rerun sends the
// model the 2 changed files, for fewer tokens than a full re-review; with
// the code around the hunks too.
// Rules: R-COST-3, R-CONTEXT-2.
func TestRerunSequence_SendsOnlyTheChangedFiles(t *testing.T) {
	enc, err := o200k()
	if err != nil {
		t.Fatal(err)
	}
	stand := critictest.NewStandIn()
	defer stand.Close()
	answer := `{"summary":"No problem found.","findings":[]}`
	stand.Reply = func(r critictest.Request) (int, []byte) {
		return http.StatusOK, critictest.Completion(answer, "stop", chatTokens(enc, r.System, r.User), 10)
	}
	model, err := openai.New(openai.Config{BaseURL: stand.URL, Model: "gpt-4.1"})
	if err != nil {
		t.Fatal(err)
	}
	llm, err := critic.NewLLM(model)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runRerunSequence(t.Context(), llm, stand, 20, 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	// The context case (R-CONTEXT-1): the head's files add each edited
	// function to the prompt, and a rerun still sends only what changed.
	ct, err := runContextSequence(t.Context(), llm, 20, 5)
	if err != nil {
		t.Fatal(err)
	}
	if ct.LinesShown < 20*10 || ct.FullAfter <= ct.FullBefore || ct.RerunAfter <= ct.RerunBefore || ct.RerunAfter >= float64(ct.FullAfter)*3/10 {
		t.Fatalf("%+v: want the functions shown, for more tokens, and a rerun under 0.30 of a full review", ct)
	}
	if rt.FilesSent != 2 || rt.RerunInput <= 0 || rt.RerunInput >= rt.FullInput || rt.FirstInput < int(rt.FullInput*9/10) {
		t.Fatalf("%+v: want 2 files sent per rerun, for fewer tokens than a full re-review", rt)
	}
	t.Logf("rerun / full re-review input tokens: %.0f / %.0f = %.2f", rt.RerunInput, rt.FullInput, rt.RerunInput/rt.FullInput)
}
