package main

import (
	"testing"
	"time"
)

// The evidence margin must exceed the feedback queue's visibility timeout
// (plus SES's event delay): a feedback batch whose invocation died before
// it registered its events with the watermark is received again before the
// watermark can pass them. With a longer visibility timeout, such a batch
// could hold the only evidence of a send whose answer was lost while later
// events move the watermark past it, and the row would be sent twice.
func TestEvidenceMarginExceedsFeedbackVisibility(t *testing.T) {
	margin, err := time.ParseDuration(EvidenceMargin)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range functionSpecs {
		if f.Name != FnFeedback {
			continue
		}
		vis := time.Duration(VisibilityFactor*f.Timeout+BatchWindowSeconds) * time.Second
		const slack = 30 * time.Second
		if vis+slack > margin {
			t.Fatalf("feedback queue visibility %s + %s for SES's event delay exceeds the evidence margin %s", vis, slack, margin)
		}
		return
	}
	t.Fatal("no feedback function")
}
