package cost

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// A price is USD per Per units: a million write units cost $0.625, one
// costs 6.25e-7, and an SES message a ten-thousandth of a dollar.
func TestPrice_Arithmetic(t *testing.T) {
	p := USEast1()
	if got := p.DynamoDBWrite.Of(1e6); !near(got, 0.625) {
		t.Errorf("a million WRU: $%v, want 0.625", got)
	}
	if got := p.DynamoDBWrite.Each(); !near(got, 6.25e-7) {
		t.Errorf("one WRU: $%v, want 6.25e-7", got)
	}
	if got := p.SESMessage.Each(); !near(got, 1e-4) {
		t.Errorf("one SES message: $%v, want 1e-4", got)
	}
	if got := (Price{USD: 1}).Each(); got != 0 {
		t.Errorf("a price without a unit count: %v, want 0", got)
	}
}

// Every price says where it was read and when.
func TestPrices_AreSourcedAndDated(t *testing.T) {
	check := func(name string, p Price) {
		if p.USD <= 0 || p.Per <= 0 || p.Unit == "" || !strings.HasPrefix(p.Source, "https://") || len(p.Taken) != len("2006-01-02") {
			t.Errorf("%s: %+v: want a positive price, a unit, an https source and a date", name, p)
		}
	}
	p := USEast1()
	for name, pr := range map[string]Price{"DynamoDBWrite": p.DynamoDBWrite, "DynamoDBRead": p.DynamoDBRead,
		"DynamoDBStorage": p.DynamoDBStorage, "SQSRequest": p.SQSRequest, "SNSPublish": p.SNSPublish, "S3Put": p.S3Put,
		"S3Get": p.S3Get, "S3Storage": p.S3Storage, "SESMessage": p.SESMessage, "DataOut": p.DataOut,
		"LambdaRequest": p.LambdaRequest, "LambdaGBSecond": p.LambdaGBSecond, "HTTPAPIRequest": p.HTTPAPIRequest,
		"LogsIngestion": p.LogsIngestion, "StepFunctionsTransition": p.StepFunctionsTransition} {
		check(name, pr)
	}
	for _, m := range Models() {
		check(m.Name+" input", m.Input)
		check(m.Name+" output", m.Output)
	}
}

// A bill prices each dimension, leaves out what was not used, sums by
// service, and the goal ratio is everything over SES.
func TestPrice_Bill(t *testing.T) {
	p := USEast1()
	u := Usage{SESMessages: 1, DynamoDBWriteUnits: 40, DynamoDBReadUnits: 8, SQSRequests: 10, S3Puts: 1,
		LambdaRequests: 4, LambdaGBSeconds: 0.1, HTTPAPIRequests: 1, LogGB: 2000.0 / GB}
	b := p.Price(u)
	for _, l := range b {
		if l.Quantity == 0 {
			t.Errorf("line %s %s has no quantity", l.Service, l.Item)
		}
	}
	want := 1e-4 + 40*0.625e-6 + 8*0.125e-6 + 10*0.4e-6 + 5e-6 + 4*0.2e-6 + 0.1*0.0000133334 + 1e-6 + 2000.0/GB*0.5
	if !near(b.Total(), want) {
		t.Fatalf("total $%.10f, want $%.10f", b.Total(), want)
	}
	by := b.ByService()
	if !near(by[SvcDynamoDB], 40*0.625e-6+8*0.125e-6) {
		t.Errorf("DynamoDB $%v", by[SvcDynamoDB])
	}
	if !near(b.Without(SvcSES), want-1e-4) {
		t.Errorf("without SES $%v, want %v", b.Without(SvcSES), want-1e-4)
	}
	if r := GoalRatio(b); !near(r, want/1e-4) {
		t.Errorf("goal ratio %v, want %v", r, want/1e-4)
	}
	if top := b.Largest(1); len(top) != 1 || top[0].Service != SvcSES {
		t.Errorf("largest line %v, want the SES message", top)
	}
	if !math.IsInf(GoalRatio(p.Price(Usage{SQSRequests: 1})), 1) {
		t.Error("no SES charge: the ratio must be infinite")
	}
	// Usage scales and adds per field.
	if got := u.Scale(0.5).Add(u.Scale(0.5)); got != u {
		t.Errorf("half plus half: %+v, want %+v", got, u)
	}
}

// Lambda bills each invocation rounded up to the millisecond at its
// memory size; SQS and SNS bill per started 64 KB; storage is prorated.
func TestUnits(t *testing.T) {
	if got := GBSeconds(256, 10.2, 0.3); !near(got, 0.25*12/1000) {
		t.Errorf("256 MB for 11 ms and 1 ms: %v GB-s, want 0.003", got)
	}
	for n, want := range map[int]float64{0: 1, 1: 1, 65536: 1, 65537: 2, 256 * 1024: 4} {
		if got := Chunks64K(n); got != want {
			t.Errorf("Chunks64K(%d) = %v, want %v", n, got, want)
		}
	}
	if got := GBMonths(GB, 90); !near(got, 3) {
		t.Errorf("1 GB for 90 days: %v GB-months, want 3", got)
	}
}

// The Step Functions design of a review makes 6 transitions plus one per
// recipient: Fetch, Critique, PrepareDeliveries, the Map, Send per
// recipient, Finalize, Done.
func TestReviewMachine_Transitions(t *testing.T) {
	m := ReviewMachine()
	for r, want := range map[int]int{1: 7, 3: 9, 20: 26} {
		got, err := m.Transitions(r)
		if err != nil || got != want {
			t.Errorf("%d recipients: %d transitions (%v), want %d", r, got, err, want)
		}
	}
	if _, err := json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	broken := []Machine{
		{StartAt: "A", States: map[string]State{"A": {Type: "Task", Next: "B"}}},                                       // undefined state
		{StartAt: "A", States: map[string]State{"A": {Type: "Task", Next: "A"}}},                                       // loop
		{StartAt: "A", States: map[string]State{"A": {Type: "Task"}}},                                                  // no way out
		{StartAt: "A", States: map[string]State{"A": {Type: "Map", End: true}}},                                        // map without processor
		{StartAt: "A", States: map[string]State{"A": {Type: "Map", End: true, ItemProcessor: &Machine{StartAt: "X"}}}}, // broken processor
	}
	for i, b := range broken {
		if n, err := b.Transitions(3); err == nil {
			t.Errorf("broken machine %d: %d transitions, want an error", i, n)
		}
	}
	if _, err := m.Transitions(-1); err == nil {
		t.Error("negative items: want an error")
	}
}
