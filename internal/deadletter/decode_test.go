package deadletter

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// R-STAGE-5: "Trigger replay from dead-letter queue using original payload
// reference and sanitized context": the envelope must survive a round trip.
func TestDecode_RoundTrip(t *testing.T) {
	env := New(plantedFailure())
	env.Annotate("triage", "upstream recovered", t1)
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := Decode(b)
	if err != nil || !ok {
		t.Fatalf("Decode: ok=%v err=%v", ok, err)
	}
	if !reflect.DeepEqual(got, env) {
		t.Errorf("round trip changed the envelope:\n got %+v\nwant %+v", got, env)
	}
}

// A raw stage message moved by the SQS redrive policy (crash loop) has no
// schema_version: Decode reports ok=false so the caller wraps it.
func TestDecode_RawRedrivenMessage(t *testing.T) {
	for _, raw := range []string{`{"job_id":"job-1","stage":"llm"}`, `[1,2]`, `"text"`, `42`, `null`} {
		env, ok, err := Decode([]byte(raw))
		if err != nil || ok || !reflect.DeepEqual(env, Envelope{}) {
			t.Errorf("Decode(%s) = ok %v, err %v", raw, ok, err)
		}
	}
	wrapped := New(Failure{Stage: StageLLM, Err: ErrRedriven, Attempts: 5, LastFailureAt: t0,
		Message: Original{MessageID: "m-9", Body: `{"job_id":"job-1","stage":"llm"}`}})
	if wrapped.ErrorClass != "UNKNOWN" || wrapped.Original.Body != `{"job_id":"job-1","stage":"llm"}` {
		t.Errorf("wrapped raw message: %+v", wrapped)
	}
}

// R-STAGE-4: "error_class: stable classification identifier" — a payload that
// cannot be read as this schema is reported, never guessed at.
func TestDecode_Errors(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{`{"schema_version":`, ErrMalformed},
		{`not json`, ErrMalformed},
		{``, ErrMalformed},
		{`{"schema_version":"1"}`, ErrMalformed},
		{`{"schema_version":null}`, ErrMalformed},
		{`{"schema_version":1,"attempts":"five"}`, ErrMalformed},
		{`{"schema_version":2,"stage":"llm"}`, ErrUnsupportedVersion},
		{`{"schema_version":0}`, ErrUnsupportedVersion},
	}
	for _, tt := range tests {
		_, ok, err := Decode([]byte(tt.in))
		if ok || !errors.Is(err, tt.want) {
			t.Errorf("Decode(%q) = ok %v, err %v; want %v", tt.in, ok, err, tt.want)
		}
	}
	// Unknown fields of the current version are tolerated (additive changes).
	if _, ok, err := Decode([]byte(`{"schema_version":1,"future_field":true}`)); !ok || err != nil {
		t.Errorf("additive field rejected: ok %v err %v", ok, err)
	}
}
