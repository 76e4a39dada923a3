package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

// What the feedback function quarantines (R-EVIDENCE-10): it may write
// only under the quarantine prefix of the payload bucket, and a lifecycle
// rule expires the copies sooner than the payloads, since they may hold
// addresses.
func TestQuarantine_FeedbackWritesOnlyThereAndItExpires(t *testing.T) {
	s := synth(t)
	var puts []string
	for _, g := range s.grants(t, FnFeedback) {
		if strings.HasPrefix(g.action, "s3:") {
			puts = append(puts, g.action+" "+g.resource)
		}
	}
	if len(puts) != 1 || !strings.HasPrefix(puts[0], "s3:PutObject ") || !strings.Contains(puts[0], "/"+QuarantinePrefix+"*") {
		t.Errorf("feedback's S3 grants %v, want PutObject on %s* only", puts, QuarantinePrefix)
	}
	found := false
	for _, r := range get(props(s.resource(t, IDPayloadBucket)), "LifecycleConfiguration", "Rules").([]any) {
		if get(r, "Prefix") == QuarantinePrefix {
			found = true
			if num(get(r, "ExpirationInDays")) != QuarantineExpiryDays || get(r, "Status") != "Enabled" || QuarantineExpiryDays >= PayloadExpiryDays {
				t.Errorf("quarantine rule %v, want expiry after %d days, sooner than the payloads", r, QuarantineExpiryDays)
			}
		}
	}
	if !found {
		t.Errorf("no lifecycle rule for %s", QuarantinePrefix)
	}
}

// The uncertain-send policy (R-EVIDENCE-9) is context uncertainSend:
// resend by default, hold when asked, anything else refused at synth.
func TestUncertainSend_Context(t *testing.T) {
	synth(t)
	for in, want := range map[string]string{"": "resend", "resend": "resend", "hold": "hold", "sometimes": ""} {
		ctx := map[string]any{}
		if in != "" {
			ctx[CtxUncertainSend] = in
		}
		cfg, err := ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}).Node())
		switch {
		case want == "" && (err == nil || !strings.Contains(err.Error(), CtxUncertainSend)):
			t.Errorf("%q: err %v, want one naming %s", in, err, CtxUncertainSend)
		case want != "" && (err != nil || cfg.UncertainSend != want):
			t.Errorf("%q: %q %v, want %q", in, cfg.UncertainSend, err, want)
		}
	}
	if got := render(synth(t).env(t, FnNotify)[EnvUncertainSend]); got != "resend" {
		t.Errorf("notify's %s = %s, want resend by default", EnvUncertainSend, got)
	}
}

// The EvidenceLag alarm is set at the documented bound on a send's wait
// (docs/operations.md): the publish bound, the drain rule's horizon with
// the deployed queue settings, two sweeps and notify's longest wait
// between looks (a minute).
// Rules: R-RECON-3.
func TestEvidenceLagAlarm_IsTheDocumentedBound(t *testing.T) {
	margin, _ := time.ParseDuration(EvidenceMargin)
	lag, _ := time.ParseDuration(CounterLag)
	every := time.Duration(SweepEveryMinutes) * time.Minute
	vt := time.Duration(VisibilityFactor*FeedbackTimeoutSeconds+BatchWindowSeconds) * time.Second
	horizon := (MaxReceiveCount+1)*(3*every+lag) + MaxReceiveCount*vt
	if want := margin + horizon + 2*every + time.Minute; time.Duration(EvidenceLagAlarmSeconds)*time.Second != want || EvidenceLagAlarmSeconds != 4390 {
		t.Errorf("EvidenceLagAlarmSeconds %d, want %s", EvidenceLagAlarmSeconds, want)
	}
	i := slices.IndexFunc(functionSpecs, func(f fnSpec) bool { return f.Name == FnFeedback })
	if functionSpecs[i].Timeout != FeedbackTimeoutSeconds {
		t.Errorf("feedback's timeout %v, want FeedbackTimeoutSeconds", functionSpecs[i].Timeout)
	}
}
