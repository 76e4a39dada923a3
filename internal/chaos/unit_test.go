package chaos

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/deadletter"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/redact"
	"github.com/criticizer/criticizer/internal/testseed"
)

// The leak scan must catch what it exists to catch: a recipient's address
// in any case, and every planted secret; and it must not cry wolf on the
// pseudonyms redaction leaves (R-STAGE-4).
func TestLeakScanner_FindsAddressesAndSecrets_NotPseudonyms(t *testing.T) {
	specs := generate(testseed.Rand(t, 1), "xtest", 5, 0.3, 0, "tok")
	p := plantedSecrets(1)
	addr := specs[0].Recipients[0]
	for _, c := range []struct {
		line string
		leak bool
	}{
		{`{"msg":"sent","to":"` + addr + `"}`, true},
		{`{"msg":"sent","to":"` + strings.ToUpper(addr) + `."}`, true},
		{`{"error":"HMAC with ` + p.webhook + `"}`, true},
		{`{"url":"https://x/?access_token=` + p.token + `"}`, true},
		{`{"msg":"sent","to":"` + redact.Email(addr) + `"}`, false},
		{`{"msg":"from","addr":"criticizer@example.com"}`, false},
	} {
		s := newLeakScanner(specs, p.all())
		if got := s.scan("log", []byte(c.line)); got != c.leak {
			t.Errorf("scan(%s) = %v, want %v", c.line, got, c.leak)
		}
		if c.leak && strings.Contains(s.redact(c.line), addr) {
			t.Errorf("redact left the address in %s", s.redact(c.line))
		}
	}
}

// An envelope missing any R-STAGE-4 field is reported incomplete.
func TestComplete_NamesMissingEnvelopeFields(t *testing.T) {
	now := time.Now()
	env := deadletter.New(deadletter.Failure{Stage: "fetch", JobID: "j_1", Err: errors.New("ThrottlingException: Rate exceeded"), Attempts: 5,
		FirstFailureAt: now, LastFailureAt: now, Context: map[string]string{"message_id": "m"},
		Message: deadletter.Original{MessageID: "m", Body: `{"job_id":"j_1"}`}})
	if miss := complete(env, "fetch"); len(miss) != 0 {
		t.Fatalf("a full envelope is reported lacking %v", miss)
	}
	env.Original.Body, env.ErrorClass = "", ""
	miss := complete(env, "llm")
	for _, want := range []string{"stage", "error_class", "original message"} {
		if !strings.Contains(strings.Join(miss, ","), want) {
			t.Errorf("missing %v does not name %s", miss, want)
		}
	}
}

// Crashes are only injected inside an invocation; a poller's loop or the
// sweeper gets the other kinds. The same seed gives the same decisions.
func TestInjector_CrashOnlyInInvocations_SameSeedSameChoices(t *testing.T) {
	run := func(ctx context.Context) []Kind {
		in := newInjector(42, 1)
		in.on.Store(true)
		var kinds []Kind
		for range 500 {
			r, ok := in.choose(ctx, "DynamoDB", "GetItem", nil)
			if !ok {
				t.Fatal("rate 1 must fail every call")
			}
			k := KindAPIError
			switch r.Kind {
			case fault.Crash:
				k = KindCrash
			case fault.Latency:
				k = KindLatency
			}
			kinds = append(kinds, k)
		}
		return kinds
	}
	for _, k := range run(context.Background()) {
		if k == KindCrash {
			t.Fatal("a crash outside an invocation would kill a poller for good")
		}
	}
	inv := withScope(context.Background(), &scope{crashable: true, jobs: []job.ID{"j_1"}})
	a, b := run(inv), run(inv)
	crashes := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("choice %d differs between runs with one seed", i)
		}
		if a[i] == KindCrash {
			crashes++
		}
	}
	if crashes == 0 {
		t.Fatal("no crash in 500 invocation calls")
	}
}

// The campaign's SES event bridge publishes events of this run's mail
// only: the emulator is shared with every package `make test` runs, and
// SES publishes events only for the stack's own configuration set. Every
// address the run mails carries its id; another run's or test's does not.
func TestOwnMail_ThisRunsAddressesOnly(t *testing.T) {
	own := ownMail("x1a2b3c4d")
	mail := func(to ...string) devstack.StoredEmail {
		var e devstack.StoredEmail
		e.Destination.To = to
		return e
	}
	for _, c := range []struct {
		e    devstack.StoredEmail
		want bool
	}{
		{mail("reviewer003.x1a2b3c4d@example.com"), true},
		{mail("Daily001.X1A2B3C4D@Example.com"), true},
		{mail("probe.x1a2b3c4d@example.com"), true},
		{mail("reviewer003.x9f9f9f9f@example.com"), false},
		{mail("bridge-test@example.com"), false},
		{mail("success@simulator.amazonses.com"), false},
		{mail("x1a2b3c4d@example.com"), false},
		{mail(), false},
	} {
		if got := own(c.e); got != c.want {
			t.Errorf("ownMail(%v) = %v, want %v", c.e.Destination.To, got, c.want)
		}
	}
}

// A drain that times out is a failure of its own, named first, so a slow
// machine's campaign is not read as jobs lost (CI once reported "lost"
// jobs of a stack still at work).
func TestFailures_DrainTimedOutNamedFirst(t *testing.T) {
	r := &Report{Lost: 2, DrainTimedOut: "1 jobs not terminal"}
	f := r.Failures()
	if len(f) != 2 || !strings.HasPrefix(f[0], "the stack did not drain: 1 jobs not terminal") {
		t.Errorf("Failures() = %q, want the drain first, then the lost jobs", f)
	}
	if f := (&Report{}).Failures(); len(f) != 0 {
		t.Errorf("a clean report fails: %q", f)
	}
}
