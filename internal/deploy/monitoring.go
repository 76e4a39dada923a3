package deploy

import (
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/obs"
)

// Alarm thresholds.
const (
	OldestMessageAlarmSeconds = 15 * 60
	// EvidenceLagAlarmSeconds is the documented bound on how long a send
	// whose answer was lost waits on the evidence path (docs/operations.md,
	// "Held deliveries"; R-RECON-3): the publish bound (5 min), the drain
	// rule's horizon under steady traffic (internal/drain:
	// (maxReceiveCount+1)·(3·the schedule + the counters' lag) +
	// maxReceiveCount·the feedback queue's visibility timeout), two sweeps,
	// and notify's longest wait between looks at a held row (the retry
	// policy's one-minute maximum backoff). 4390 s with the deployed
	// settings; TestEvidenceLagAlarm_IsTheDocumentedBound checks the
	// arithmetic.
	EvidenceLagAlarmSeconds = int(config.DefaultEvidenceMargin/time.Second) +
		(MaxReceiveCount+1)*(3*int(config.DefaultSweepEvery/time.Second)+int(config.DefaultCounterLag/time.Second)) +
		MaxReceiveCount*(VisibilityFactor*FeedbackTimeoutSeconds+BatchWindowSeconds) +
		2*int(config.DefaultSweepEvery/time.Second) + NotifyLookSeconds
	// NotifyLookSeconds is notify's longest wait between two looks at a
	// held row: retry.DefaultPolicy's Max backoff.
	NotifyLookSeconds      = 60
	BounceRateThreshold    = 0.05
	ComplaintRateThreshold = 0.001
)

// insights is a CloudWatch Metrics Insights query aggregating one of the
// code's metrics over the whole namespace, whatever its dimensions. The
// stage runner emits DeadLetters and Escalations with the dimensions
// {Stage, ErrorClass} only, so no dimensionless series exists to alarm
// on, and an alarm cannot use SEARCH(); a Metrics Insights query can be
// alarmed on and covers every dimension combination, including ones that
// do not exist yet.
func insights(agg, metric, groupBy string) Metric {
	q := fmt.Sprintf(`SELECT %s(%s) FROM "%s"`, agg, metric, obs.Namespace)
	if groupBy != "" {
		q += " GROUP BY " + groupBy
	}
	return Metric{Query: q, Period: 300, Label: metric}
}

// monitoring is the alarms and the dashboard.
func monitoring(d Deployment) ([]Alarm, [][]Graph) {
	var alarms []Alarm
	alarm := func(id, desc string, m Metric, threshold float64) {
		alarms = append(alarms, Alarm{ID: id, Description: desc, Metric: m, Threshold: threshold, Periods: 1})
	}
	sqs := func(name, queueID, stat string, period int, label string) Metric {
		return Metric{Namespace: "AWS/SQS", Name: name, Dimension: "QueueName", DimensionValue: GetAtt(queueID, "QueueName"),
			Stat: stat, Period: period, Label: label}
	}
	var depth, dlqDepth, oldest []Metric
	for _, q := range d.Queues {
		dv := sqs("ApproximateNumberOfMessagesVisible", DLQID(q.Name), "Maximum", 60, q.Name+" DLQ")
		alarm(Title(q.Name)+"DlqNotEmpty", q.Name+" dead-letter queue holds messages: inspect and replay them (criticizer CLI)", dv, 0)
		age := sqs("ApproximateAgeOfOldestMessage", QueueID(q.Name), "Maximum", 300, q.Name)
		alarm(Title(q.Name)+"QueueOldestMessage", fmt.Sprintf("%s queue's oldest message is older than %d minutes: the stage is stuck or throttled",
			q.Name, OldestMessageAlarmSeconds/60), age, OldestMessageAlarmSeconds)
		depth = append(depth, sqs("ApproximateNumberOfMessagesVisible", QueueID(q.Name), "Maximum", 60, q.Name))
		dlqDepth, oldest = append(dlqDepth, dv), append(oldest, age)
	}
	for _, m := range []struct{ metric, desc string }{
		{"DeadLetters", "a stage dead-lettered a message (Criticizer/DeadLetters, any Stage/ErrorClass)"},
		{"Escalations", "a replayed message failed again with the same class and was re-dead-lettered escalated"},
		{"OrderingViolations", "a delivery marked sent was never confirmed by SES once the evidence path caught up past it: it is held for an operator (criticizer deliveries held)"},
		{"DuplicateSends", "an SES event names a message other than its delivery's: the delivery was sent twice (criticizer deliveries show <id>; docs/architecture.md, The remaining window)"},
		{"ResentWithoutEvidence", "a delivery whose send's answer was lost was sent again because the SES evidence path caught up past it with no event naming it"},
		{"LateSendEvents", "an SES Send event reached the feedback queue later than the evidence bound (CRITICIZER_EVIDENCE_MARGIN) after SES accepted its message: the assumption the evidence rule rests on was broken, and a send whose answer was lost may have been resent (R-EVIDENCE-7); raise the bound"},
		{"SendingPaused", "the SES account's daily sending quota is spent: notify holds every email (nothing is dead-lettered) until the rolling 24 hours have room; request a higher quota or production access (R-RATE-3)"},
	} {
		alarm(m.metric, m.desc, insights("SUM", m.metric, ""), 0)
	}
	// The sweeper's gauges (R-RECON-3). EvidenceLag: missing data breaches,
	// since the sweeper emits it on every run.
	held, lag := insights("MAX", "HeldDeliveries", ""), insights("MAX", "EvidenceLag", "")
	alarm("HeldDeliveries", "deliveries are held for SES evidence or an operator: fix the evidence path (feedback function, SNS, configuration set), or settle them (criticizer deliveries held)", held, 0)
	alarms = append(alarms, Alarm{ID: "EvidenceLag", Metric: lag, Threshold: float64(EvidenceLagAlarmSeconds), Periods: 2, MissingBreaches: true,
		Description: fmt.Sprintf("a send whose answer was lost has waited on the evidence path longer than its bound (%d minutes): the feedback queue is backed up or an event fails in its DLQ, the sweeper does not run, or the hold policy waits for you (criticizer deliveries held)", EvidenceLagAlarmSeconds/60)})
	ses := func(metric string) Metric {
		return Metric{Namespace: "AWS/SES", Name: metric, Stat: "Maximum", Period: 3600, Label: metric}
	}
	alarm("SesBounceRate", "SES account bounce rate above 5% (SES reviews accounts at 5%, may pause sending at 10%)", ses("Reputation.BounceRate"), BounceRateThreshold)
	alarm("SesComplaintRate", "SES account complaint rate above 0.1% (SES reviews accounts at 0.1%, may pause sending at 0.5%)", ses("Reputation.ComplaintRate"), ComplaintRateThreshold)
	lambda := func(name, fn, stat string) Metric {
		return Metric{Namespace: "AWS/Lambda", Name: name, Dimension: "FunctionName", DimensionValue: Ref(FunctionID(fn)), Stat: stat, Period: 300, Label: fn}
	}
	var errs, durations, throttles []Metric
	for _, f := range d.Functions {
		// A function error is a crash, a timeout or an init failure:
		// handlers report failures as batch item failures or HTTP answers.
		e := lambda("Errors", f.Name, "Sum")
		alarm(Title(f.Name)+"Errors", f.Name+" function errors (crash, timeout or init failure)", e, 0)
		errs = append(errs, e)
		durations = append(durations, lambda("Duration", f.Name, "p99"))
		throttles = append(throttles, lambda("Throttles", f.Name, "Sum"))
	}
	api := func(name, label string) Metric {
		return Metric{Namespace: "AWS/ApiGateway", Name: name, Dimension: "ApiId", DimensionValue: Ref(IDHTTPAPI), Stat: "Sum", Period: 300, Label: label}
	}
	g := func(title string, ms ...Metric) Graph { return Graph{Title: title, Metrics: ms} }
	dashboard := [][]Graph{
		{g("Queue depth (visible)", depth...), g("Dead-letter queue depth", dlqDepth...)},
		{g("Oldest message age (s)", oldest...), g("HTTP API errors", api("4xx", "4xx"), api("5xx", "5xx"))},
		{g("Function errors", errs...), g("Function duration p99 (ms)", durations...)},
		{g("Function throttles", throttles...), g("SES reputation", ses("Reputation.BounceRate"), ses("Reputation.ComplaintRate"))},
		{g("Dead letters by stage", insights("SUM", "DeadLetters", "Stage")), g("Escalations by stage", insights("SUM", "Escalations", "Stage"))},
		{g("Retries by stage", insights("SUM", "Retries", "Stage")), g("Successes by stage", insights("SUM", "Succeeded", "Stage"))},
		{g("Ordering violations (sweeper)", insights("SUM", "OrderingViolations", "")), g("SES events recorded by type", insights("SUM", "ProviderEvents", "EventType"))},
		{g("Held deliveries and evidence lag (s)", held, lag), g("Duplicate sends and resends without evidence", insights("SUM", "DuplicateSends", ""), insights("SUM", "ResentWithoutEvidence", ""))},
	}
	return alarms, dashboard
}
