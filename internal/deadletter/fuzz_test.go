package deadletter

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Decode reads whatever lands in a dead-letter queue; it must never panic,
// and anything it accepts must re-encode to something it accepts again.
func FuzzDecode(f *testing.F) {
	valid, _ := json.Marshal(New(plantedFailure()))
	for _, s := range []string{
		string(valid), `{"job_id":"x"}`, `{"schema_version":1}`, `{"schema_version":2}`,
		`{"schema_version":"1"}`, `{"schema_version":1e400}`, `[]`, `null`, ``, `{`,
		`{"schema_version":1,"first_failure_at":"not a time"}`, `{"schema_version":1,"notes":[{"at":1}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		env, ok, err := Decode(b)
		if ok && err != nil {
			t.Fatalf("ok with error %v", err)
		}
		if !ok {
			return
		}
		re, err := json.Marshal(env)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, ok, err := Decode(re); !ok || err != nil {
			t.Fatalf("re-decode of %s: ok %v err %v", re, ok, err)
		}
	})
}

// FuzzEnvelopeRoundTrip is decode(encode(env)) == env for envelopes built
// from arbitrary field values, both directly and through New (which redacts
// and fills in the context): whatever a stage writes to a dead-letter queue,
// the replay and triage tools read back unchanged (R-STAGE-4, R-STAGE-5). Strings are
// made valid UTF-8 first: JSON cannot carry anything else, and New's
// redaction keeps valid text valid (FuzzRedact). The arguments are few and
// the seeds short on purpose: the fuzzer minimizes every new interesting
// input, argument by argument, and Redact is not cheap.
func FuzzEnvelopeRoundTrip(f *testing.F) {
	f.Add("notify", "job-42", "rejected mail for ann@example.com: token=abc", "request_id=lambda-req-1",
		`{"job_id":"job-42","stage":"notify"}`, uint8(5), 3, t0.UnixNano(), t1.UnixNano())
	f.Add("llm", "", "", "=", "", uint8(0), 0, int64(0), int64(-1))
	f.Add("", "j\x00", "\xff", "k\x00=v\xff", "a\u2028", uint8(255), -5, int64(-1)<<62, int64(1)<<62)

	f.Fuzz(func(t *testing.T, stage, jobID, errText, kv, body string, flags uint8, attempts int, first, last int64) {
		v := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
		at := func(n int64) time.Time { return time.Unix(0, n).UTC() }
		stage, jobID, errText, body = v(stage), v(jobID), v(errText), v(body)
		key, val, _ := strings.Cut(v(kv), "=")
		env := Envelope{
			SchemaVersion: SchemaVersion, ID: EnvelopeID(stage, jobID, at(first)), Stage: stage,
			ErrorClass: errText, Retryable: flags&1 != 0, LastStack: errText,
			SanitizedContext: map[string]string{key: val},
			FirstFailureAt:   at(first), LastFailureAt: at(last), Attempts: attempts, JobID: jobID,
			Original:  Original{MessageID: jobID, Body: body, BodySHA256: body, Queue: stage},
			Escalated: flags&2 != 0, Replays: int(flags >> 4),
		}
		if flags&4 != 0 {
			env.Notes = []Note{{At: at(last), Action: stage, Text: errText}}
		}
		built := New(Failure{Stage: stage, JobID: jobID, Err: errors.New(errText), Attempts: attempts,
			FirstFailureAt: at(first), LastFailureAt: at(last), Context: map[string]string{key: val},
			Message: Original{MessageID: jobID, Body: body, Queue: stage}})
		for _, want := range []Envelope{env, built} {
			b, err := json.Marshal(want)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			got, ok, err := Decode(b)
			if !ok || err != nil {
				t.Fatalf("Decode(encode(env)): ok %v, err %v\n%s", ok, err, b)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decode(encode(env)) != env\n got %#v\nwant %#v", got, want)
			}
		}
	})
}
