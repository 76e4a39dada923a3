package main

import (
	"slices"
	"testing"
	"time"
)

// The evidence path as deployed (R-EVIDENCE-2): the sweeper, which moves
// the drain time, is told the feedback queue and its DLQ and may read
// their counters (and only that there), runs every minute, and uses the
// publish bound and the counters' lag config.go defaults to; the feedback
// function measures Send events against the same bound (R-EVIDENCE-7).
func TestEvidencePath_SweeperReadsTheFeedbackQueues(t *testing.T) {
	s := synth(t)
	env := s.env(t, FnSweeper)
	for _, k := range []string{EnvFeedbackQueueURL, EnvFeedbackDLQURL, EnvCounterLag, EnvEvidenceMargin} {
		if _, ok := env[k]; !ok {
			t.Errorf("the sweeper has no %s", k)
		}
	}
	if _, ok := s.env(t, FnFeedback)[EnvEvidenceMargin]; !ok {
		t.Errorf("the feedback function has no %s: it cannot measure Send events against the bound", EnvEvidenceMargin)
	}
	for _, d := range []string{EvidenceMargin, CounterLag} {
		if _, err := time.ParseDuration(d); err != nil {
			t.Fatal(err)
		}
	}
	gs := s.grants(t, FnSweeper)
	counters := ids(on(gs, "sqs:GetQueueAttributes"))
	for _, q := range []string{QueueID(QFeedback), DLQID(QFeedback)} {
		if !slices.Contains(counters, q) {
			t.Errorf("the sweeper cannot read %s's counters (it reads %v)", q, counters)
		}
	}
	for _, a := range []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:PurgeQueue"} {
		if len(on(gs, a)) > 0 {
			t.Errorf("the sweeper may %s: it only reads counters", a)
		}
	}
	if SweepEveryMinutes != 1 {
		t.Errorf("the sweeper runs every %d minutes; the drain check wants every minute", SweepEveryMinutes)
	}
}
