package deploy_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/sesevent"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/wire/llm"
)

// env is function fn's environment's literal values.
func env(t *testing.T, d deploy.Deployment, fn string) map[string]string {
	t.Helper()
	f, ok := d.Function(fn)
	if !ok {
		t.Fatalf("no function %s", fn)
	}
	out := map[string]string{}
	for _, v := range d.Environment(f) {
		if _, dup := out[v.Name]; dup {
			t.Errorf("%s: %s set twice", fn, v.Name)
		}
		out[v.Name], _ = v.Value.IsLiteral()
	}
	return out
}

// A slow model never loses its batch, and receives that run out still
// leave an envelope: the llm function's timeout holds its batch of
// worst-case model calls with the stage's work around them and the
// runner's reserve; every queue's visibility is at least 6 x its
// consumer's timeout; the budget runs out before the receives do, and a
// message's receives before the queue's retention; each stage function is
// told its queue's maxReceiveCount; the sweeper never re-enqueues a job
// whose llm attempt is still running.
// Rules: R-STAGE-9, R-STAGE-10.
func TestDeadlineArithmetic(t *testing.T) {
	d := deploy.Describe()
	l, _ := d.Function(deploy.FnLLM)
	model, err := time.ParseDuration(env(t, d, deploy.FnLLM)[config.EnvModelTimeout])
	if err != nil {
		t.Fatal(err)
	}
	timeout := time.Duration(l.Timeout) * time.Second
	if need := time.Duration(l.BatchSizeOrDefault())*(model+llm.Overhead) + stage.DefaultReserve; need > timeout {
		t.Errorf("llm: batch %d x (model %v + %v) + reserve %v = %v > timeout %v", l.BatchSizeOrDefault(), model, llm.Overhead, stage.DefaultReserve, need, timeout)
	}
	if timeout > 900*time.Second {
		t.Errorf("llm timeout %v beyond Lambda's 900 s", timeout)
	}
	stuck, err := time.ParseDuration(env(t, d, deploy.FnSweeper)[config.EnvSweepStuckAfter])
	if err != nil {
		t.Fatal(err)
	}
	if stuck <= timeout+retry.DefaultPolicy().Max {
		t.Errorf("the sweeper's stuck-after %v does not exceed an llm attempt (%v) and a backoff (%v)", stuck, timeout, retry.DefaultPolicy().Max)
	}
	for _, q := range d.Queues {
		i := slices.IndexFunc(d.Functions, func(f deploy.Function) bool { return f.Queue == q.Name })
		if i < 0 {
			t.Fatalf("queue %s has no consumer", q.Name)
		}
		f := d.Functions[i]
		if q.VisibilitySeconds < 6*f.Timeout+deploy.BatchWindowSeconds {
			t.Errorf("%s: visibility %ds < 6 x timeout %ds + window", q.Name, q.VisibilitySeconds, f.Timeout)
		}
		if deploy.MaxReceiveCount < retry.DefaultPolicy().MaxAttempts {
			t.Errorf("maxReceiveCount %d below the stage budget of %d attempts", deploy.MaxReceiveCount, retry.DefaultPolicy().MaxAttempts)
		}
		if deploy.QueueRetentionDays*86400 < deploy.MaxReceiveCount*q.VisibilitySeconds {
			t.Errorf("%s: retention %d days < %d receives x visibility %ds: a message could expire before its DLQ", q.Name, deploy.QueueRetentionDays, deploy.MaxReceiveCount, q.VisibilitySeconds)
		}
		if f.Name == deploy.FnFeedback {
			continue // not a stage runner
		}
		if got := env(t, d, f.Name)[config.EnvMaxReceiveCount]; got != "10" || deploy.MaxReceiveCount != 10 {
			t.Errorf("%s: %s = %q, its queue's maxReceiveCount is %d", f.Name, config.EnvMaxReceiveCount, got, deploy.MaxReceiveCount)
		}
	}
}

// The evidence path as deployed (R-EVIDENCE-2): the sweeper, which moves
// the drain time, is told the feedback queue and its DLQ, the publish
// bound and the counters' lag, and runs every minute; the feedback
// function measures Send events against the same bound (R-EVIDENCE-7),
// and its queue's visibility (a batch whose invocation died is seen
// again) is shorter than the bound.
func TestEvidencePath_AsDeployed(t *testing.T) {
	d := deploy.Describe()
	sw := env(t, d, deploy.FnSweeper)
	for _, k := range []string{config.EnvFeedbackQueueURL, config.EnvFeedbackDLQURL, config.EnvCounterLag, config.EnvEvidenceMargin} {
		if _, ok := sw[k]; !ok {
			t.Errorf("the sweeper has no %s", k)
		}
	}
	margin, err := time.ParseDuration(env(t, d, deploy.FnFeedback)[config.EnvEvidenceMargin])
	if err != nil {
		t.Fatalf("the feedback function's %s: %v", config.EnvEvidenceMargin, err)
	}
	if margin != config.DefaultEvidenceMargin {
		t.Errorf("the feedback function's bound %v, config's default %v", margin, config.DefaultEvidenceMargin)
	}
	if s, _ := d.Function(deploy.FnSweeper); s.Schedule != "rate(1 minute)" {
		t.Errorf("the sweeper runs on %q, want every minute", s.Schedule)
	}
	for _, q := range d.Queues {
		if q.Name == deploy.QFeedback && time.Duration(q.VisibilitySeconds)*time.Second >= margin {
			t.Errorf("the feedback queue's visibility %ds is not below the evidence bound %v", q.VisibilitySeconds, margin)
		}
	}
}

// The parameters' constraints are what the functions accept: a
// reservation of notify is none or at least its event source's maximum
// concurrency; a sender the SES grant can take the address from; the
// allowed domains within config's bound. The CDK app checks context with
// the same Check, template.yaml writes the same constraints.
func TestParameters_Constraints(t *testing.T) {
	d := deploy.Describe()
	for _, tc := range []struct {
		param, value string
		ok           bool
	}{
		{"NotifyReservedConcurrency", "0", true},
		{"NotifyReservedConcurrency", "4", false},
		{"NotifyReservedConcurrency", "5", true},
		{"NotifyReservedConcurrency", "120", true},
		{"NotifyReservedConcurrency", "05", false},
		{"MailFrom", "Reviews <critic@reviews.example.org>", true},
		{"MailFrom", "critic@reviews.example.org", true},
		{"MailFrom", `"Reviews, Inc" <critic@example.org>`, true},
		{"MailFrom", "Reviews <a <critic@example.org>", false},
		{"MailFrom", "Révisions <critic@example.org>", false},
		{"MailFrom", "Reviews", false},
		{"AllowedRecipientDomains", "example.com, corp.example.org", true},
		{"AllowedRecipientDomains", "exämple.com", false},
		{"Critic", "bedrock", true},
		{"Critic", "gpt", false},
		{"LlmMaxFindings", "50", true},
		{"LlmMaxFindings", "51", false},
		{"CriticModel", "us.anthropic.claude-sonnet-4-20250514-v1:0", true},
		{"CriticModel", "gpt-4o", true},
		{"CriticModel", "a b", false},
	} {
		p, ok := d.Param(tc.param)
		if !ok {
			t.Fatalf("no parameter %s", tc.param)
		}
		if err := p.Check(tc.value); (err == nil) != tc.ok {
			t.Errorf("%s=%q: %v, want accepted %v", tc.param, tc.value, err, tc.ok)
		}
	}
	reserved, _ := d.Param("NotifyReservedConcurrency")
	for n := 1; n < deploy.NotifyMaxConcurrency; n++ {
		if reserved.Check(string(rune('0'+n))) == nil {
			t.Errorf("a reservation of %d is accepted, below notify's event source's %d", n, deploy.NotifyMaxConcurrency)
		}
	}
	domains, _ := d.Param("AllowedRecipientDomains")
	if domains.MaxLength > config.MaxAllowedRecipientDomainsBytes {
		t.Errorf("AllowedRecipientDomains allows %d characters, config %d bytes", domains.MaxLength, config.MaxAllowedRecipientDomainsBytes)
	}
	for _, p := range d.Parameters {
		if p.Default != "" || p.Number {
			if err := p.Check(p.Default); err != nil {
				t.Errorf("%s: its default %q: %v", p.Name, p.Default, err)
			}
		}
		for _, fn := range p.Functions {
			if _, ok := d.Function(fn); !ok {
				t.Errorf("%s goes to a function %s the deployment has not", p.Name, fn)
			}
		}
	}
}

// What the feedback function quarantines (R-EVIDENCE-10): it may write
// only under the quarantine prefix of the payload bucket, and a lifecycle
// rule expires the copies sooner than the diffs, since they may hold
// addresses; the prefix and the days are package sesevent's.
func TestQuarantine_FeedbackWritesOnlyThereAndItExpires(t *testing.T) {
	d := deploy.Describe()
	fb, _ := d.Function(deploy.FnFeedback)
	var s3 []deploy.Grant
	for _, g := range d.Grants(fb) {
		for _, a := range g.Actions {
			if strings.HasPrefix(a, "s3:") {
				s3 = append(s3, g)
				break
			}
		}
	}
	want := deploy.Join("", deploy.GetAtt(deploy.IDPayloadBucket, "Arn"), deploy.Lit("/"+deploy.QuarantinePrefix+"*"))
	if len(s3) != 1 || !slices.Equal(s3[0].Actions, []string{"s3:PutObject"}) || len(s3[0].Resources) != 1 || !reflect.DeepEqual(s3[0].Resources[0], want) {
		t.Errorf("feedback's S3 grants %+v, want s3:PutObject on %s* only", s3, deploy.QuarantinePrefix)
	}
	if !strings.HasPrefix(sesevent.QuarantinePrefix, deploy.QuarantinePrefix) {
		t.Errorf("feedback quarantines under %q, outside the deployment's %q", sesevent.QuarantinePrefix, deploy.QuarantinePrefix)
	}
	i := slices.IndexFunc(d.Bucket.Expire, func(e deploy.Expiry) bool { return e.Prefix == deploy.QuarantinePrefix })
	if i < 0 {
		t.Fatalf("no lifecycle rule for %s", deploy.QuarantinePrefix)
	}
	if e := d.Bucket.Expire[i]; e.Days != sesevent.QuarantineExpiryDays || e.Days >= deploy.PayloadExpiryDays {
		t.Errorf("quarantine expires after %d days, want feedback's %d, sooner than the diffs' %d", e.Days, sesevent.QuarantineExpiryDays, deploy.PayloadExpiryDays)
	}
}

// The uncertain-send policy (R-EVIDENCE-9) is one parameter, context
// uncertainSend: resend by default, hold when asked, nothing else; it
// reaches notify alone.
func TestUncertainSend_OneParameterForNotify(t *testing.T) {
	d := deploy.Describe()
	p, ok := d.Param("UncertainSend")
	if !ok || p.Context != "uncertainSend" || p.Default != "resend" || !slices.Equal(p.Allowed, []string{"resend", "hold"}) ||
		p.Env != config.EnvUncertainSend || !slices.Equal(p.Functions, []string{deploy.FnNotify}) {
		t.Errorf("UncertainSend %+v, want context uncertainSend, resend|hold, default resend, notify's %s", p, config.EnvUncertainSend)
	}
}

// The EvidenceLag alarm is set at the documented bound on a send's wait
// (docs/operations.md): the publish bound, the drain rule's horizon with
// the deployed queue settings, two sweeps and notify's longest wait
// between looks (a minute).
// Rules: R-RECON-3.
func TestEvidenceLagAlarm_IsTheDocumentedBound(t *testing.T) {
	d := deploy.Describe()
	fb, _ := d.Function(deploy.FnFeedback)
	sw := env(t, d, deploy.FnSweeper)
	every, err := time.ParseDuration(sw[config.EnvSweepEvery])
	if err != nil {
		t.Fatal(err)
	}
	lag, _ := time.ParseDuration(sw[config.EnvCounterLag])
	margin, _ := time.ParseDuration(sw[config.EnvEvidenceMargin])
	var vt time.Duration
	for _, q := range d.Queues {
		if q.Name == deploy.QFeedback {
			vt = time.Duration(q.VisibilitySeconds) * time.Second
		}
	}
	horizon := (deploy.MaxReceiveCount+1)*(3*every+lag) + deploy.MaxReceiveCount*vt
	if want := margin + horizon + 2*every + retry.DefaultPolicy().Max; time.Duration(deploy.EvidenceLagAlarmSeconds)*time.Second != want || deploy.EvidenceLagAlarmSeconds != 4390 {
		t.Errorf("EvidenceLagAlarmSeconds %d, want %s", deploy.EvidenceLagAlarmSeconds, want)
	}
	if fb.Timeout != deploy.FeedbackTimeoutSeconds {
		t.Errorf("feedback's timeout %d, want FeedbackTimeoutSeconds", fb.Timeout)
	}
	sweeper, _ := d.Function(deploy.FnSweeper)
	if sweeper.Schedule != "rate(1 minute)" || every != time.Minute {
		t.Errorf("the sweeper runs on %q and is told %s, want both every minute", sweeper.Schedule, every)
	}
}
