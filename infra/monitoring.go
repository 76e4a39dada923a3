package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/jsii-runtime-go"
)

// MetricsNamespace is internal/obs.Namespace, where the code's EMF lines land.
const MetricsNamespace = "Criticizer"

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
	EvidenceLagAlarmSeconds = 5*60 + (MaxReceiveCount+1)*(3*SweepEveryMinutes*60+2*60) +
		MaxReceiveCount*(VisibilityFactor*FeedbackTimeoutSeconds+BatchWindowSeconds) + 2*SweepEveryMinutes*60 + NotifyLookSeconds
	// NotifyLookSeconds is notify's longest wait between two looks at a
	// held row: retry.DefaultPolicy's Max backoff.
	NotifyLookSeconds      = 60
	BounceRateThreshold    = 0.05
	ComplaintRateThreshold = 0.001
)

// insights is a CloudWatch Metrics Insights query summing one of the
// code's metrics over the whole namespace, whatever its dimensions.
//
// The stage runner emits DeadLetters and Escalations with the dimension set
// {Stage, ErrorClass} only (internal/obs.Metric), so no dimensionless series
// exists to alarm on, and an alarm cannot use a SEARCH() expression. A
// Metrics Insights query can be alarmed on and aggregates every dimension
// combination, including ones that do not exist yet (a new ErrorClass, or
// whatever dimensions OrderingViolations gets).
func insights(metric string, groupBy string) string {
	return insightsAgg("SUM", metric, groupBy)
}

// insightsAgg is insights with another aggregate (MAX for a gauge).
func insightsAgg(agg, metric, groupBy string) string {
	q := fmt.Sprintf(`SELECT %s(%s) FROM "%s"`, agg, metric, MetricsNamespace)
	if groupBy != "" {
		q += " GROUP BY " + groupBy
	}
	return q
}

// alarmARNs is the ARN pattern of every CloudWatch alarm of the stack's
// account and region.
func alarmARNs(st awscdk.Stack) *string {
	return st.FormatArn(&awscdk.ArnComponents{Service: jsii.String("cloudwatch"),
		Resource: jsii.String("alarm"), ResourceName: jsii.String("*"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
}

func (s *Stack) monitoring() {
	s.AlarmTopic = awssns.NewTopic(s.Stack, jsii.String("AlarmTopic"), &awssns.TopicProps{
		DisplayName: jsii.String("Criticizer alarms"),
		MasterKey:   s.TopicKey,
		EnforceSSL:  jsii.Bool(true),
	})
	// EnforceSSL makes CDK write a topic policy holding only its Deny, and
	// a topic policy replaces SNS's default one: without this Allow no
	// alarm could publish here. CloudWatch may publish only this
	// account's alarms (aws:SourceAccount, aws:SourceArn), as the topic
	// key allows it (R-DEPLOY-2).
	s.AlarmTopic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchPublishesThisAccountsAlarms"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  &[]*string{s.AlarmTopic.TopicArn()},
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()},
			"ArnLike":      map[string]any{"aws:SourceArn": alarmARNs(s.Stack)},
		},
	}))
	if s.Config.AlarmEmail != "" {
		s.AlarmTopic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(s.Config.AlarmEmail), nil))
	}
	action := awscloudwatchactions.NewSnsAction(s.AlarmTopic)
	alarmWith := func(id, desc string, m awscloudwatch.IMetric, threshold float64, periods float64, missing awscloudwatch.TreatMissingData) {
		a := awscloudwatch.NewAlarm(s.Stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(desc),
			Metric:             m,
			Threshold:          jsii.Number(threshold),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(periods),
			TreatMissingData:   missing,
		})
		a.AddAlarmAction(action)
		a.AddOkAction(action)
	}
	alarm := func(id, desc string, m awscloudwatch.IMetric, threshold float64) {
		alarmWith(id, desc, m, threshold, 1, awscloudwatch.TreatMissingData_NOT_BREACHING)
	}
	min := func(n float64) awscdk.Duration { return awscdk.Duration_Minutes(jsii.Number(n)) }

	var queueDepth, dlqDepth, oldest []awscloudwatch.IMetric
	for _, f := range functionSpecs {
		if f.Queue == "" {
			continue
		}
		q, d, name := s.Queues[f.Queue], s.DLQs[f.Queue], title(f.Queue)
		dv := d.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("Maximum"), Period: min(1), Label: jsii.String(f.Queue + " DLQ")})
		alarm(name+"DlqNotEmpty", fmt.Sprintf("%s dead-letter queue holds messages: inspect and replay them (criticizer CLI)", f.Queue), dv, 0)
		age := q.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("Maximum"), Period: min(5), Label: jsii.String(f.Queue)})
		alarm(name+"QueueOldestMessage", fmt.Sprintf("%s queue's oldest message is older than %d minutes: the stage is stuck or throttled", f.Queue, OldestMessageAlarmSeconds/60),
			age, OldestMessageAlarmSeconds)
		queueDepth = append(queueDepth, q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("Maximum"), Period: min(1), Label: jsii.String(f.Queue)}))
		dlqDepth = append(dlqDepth, dv)
		oldest = append(oldest, age)
	}

	five := min(5)
	for _, m := range []struct{ metric, desc string }{
		{"DeadLetters", "a stage dead-lettered a message (Criticizer/DeadLetters, any Stage/ErrorClass)"},
		{"Escalations", "a replayed message failed again with the same class and was re-dead-lettered escalated"},
		{"OrderingViolations", "a delivery marked sent was never confirmed by SES once the evidence path caught up past it: it is held for an operator (criticizer deliveries held)"},
		{"DuplicateSends", "an SES event names a message other than its delivery's: the delivery was sent twice (criticizer deliveries show <id>; docs/architecture.md, The remaining window)"},
		{"ResentWithoutEvidence", "a delivery whose send's answer was lost was sent again because the SES evidence path caught up past it with no event naming it"},
		{"LateSendEvents", "an SES Send event reached the feedback queue later than the evidence bound (CRITICIZER_EVIDENCE_MARGIN) after SES accepted its message: the assumption the evidence rule rests on was broken, and a send whose answer was lost may have been resent (R-EVIDENCE-7); raise the bound"},
		{"SendingPaused", "the SES account's daily sending quota is spent: notify holds every email (nothing is dead-lettered) until the rolling 24 hours have room; request a higher quota or production access (R-RATE-3)"},
	} {
		alarm(m.metric, m.desc, awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(insights(m.metric, "")), Period: five, Label: jsii.String(m.metric),
		}), 0)
	}
	// The sweeper's gauges, emitted every sweep (R-RECON-3).
	alarm("HeldDeliveries", "deliveries are held for SES evidence or an operator: fix the evidence path (feedback function, SNS, configuration set), or settle them (criticizer deliveries held)",
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(insightsAgg("MAX", "HeldDeliveries", "")), Period: five, Label: jsii.String("HeldDeliveries")}), 0)
	// Missing data breaches: the sweeper emits EvidenceLag on every run, so
	// none means the sweeper (or the metric) is broken.
	alarmWith("EvidenceLag", fmt.Sprintf("a send whose answer was lost has waited on the evidence path longer than its bound (%d minutes): the feedback queue is backed up or an event fails in its DLQ, the sweeper does not run, or the hold policy waits for you (criticizer deliveries held)", EvidenceLagAlarmSeconds/60),
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(insightsAgg("MAX", "EvidenceLag", "")), Period: five, Label: jsii.String("EvidenceLag")}),
		EvidenceLagAlarmSeconds, 2, awscloudwatch.TreatMissingData_BREACHING)

	ses := func(metric string) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String("AWS/SES"), MetricName: jsii.String(metric),
			Statistic: jsii.String("Maximum"), Period: awscdk.Duration_Hours(jsii.Number(1))})
	}
	alarm("SesBounceRate", "SES account bounce rate above 5% (SES reviews accounts at 5%, may pause sending at 10%)", ses("Reputation.BounceRate"), BounceRateThreshold)
	alarm("SesComplaintRate", "SES account complaint rate above 0.1% (SES reviews accounts at 0.1%, may pause sending at 0.5%)", ses("Reputation.ComplaintRate"), ComplaintRateThreshold)

	var errs, durations, throttles []awscloudwatch.IMetric
	for _, f := range functionSpecs {
		fn := s.Functions[f.Name]
		e := fn.MetricErrors(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five, Label: jsii.String(f.Name)})
		// A function error is a crash or timeout: handlers report failures
		// as batch item failures or HTTP responses, never as errors.
		alarm(title(f.Name)+"Errors", f.Name+" function errors (crash, timeout or init failure)", e, 0)
		errs = append(errs, e)
		durations = append(durations, fn.MetricDuration(&awscloudwatch.MetricOptions{Statistic: jsii.String("p99"), Period: five, Label: jsii.String(f.Name)}))
		throttles = append(throttles, fn.MetricThrottles(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five, Label: jsii.String(f.Name)}))
	}

	graph := func(title string, left []awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Left: &left,
			Width: jsii.Number(12), Height: jsii.Number(6)})
	}
	expr := func(metric, groupBy string) awscloudwatch.IMetric {
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(insights(metric, groupBy)), Period: five, Label: jsii.String(metric)})
	}
	api5xx := s.APIStage.MetricServerError(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five, Label: jsii.String("5xx")})
	api4xx := s.APIStage.MetricClientError(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five, Label: jsii.String("4xx")})
	awscloudwatch.NewDashboard(s.Stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		// One Metrics Insights query per graph.
		Widgets: &[]*[]awscloudwatch.IWidget{
			{graph("Queue depth (visible)", queueDepth), graph("Dead-letter queue depth", dlqDepth)},
			{graph("Oldest message age (s)", oldest), graph("HTTP API errors", []awscloudwatch.IMetric{api4xx, api5xx})},
			{graph("Function errors", errs), graph("Function duration p99 (ms)", durations)},
			{graph("Function throttles", throttles), graph("SES reputation", []awscloudwatch.IMetric{ses("Reputation.BounceRate"), ses("Reputation.ComplaintRate")})},
			{graph("Dead letters by stage", []awscloudwatch.IMetric{expr("DeadLetters", "Stage")}), graph("Escalations by stage", []awscloudwatch.IMetric{expr("Escalations", "Stage")})},
			{graph("Retries by stage", []awscloudwatch.IMetric{expr("Retries", "Stage")}), graph("Successes by stage", []awscloudwatch.IMetric{expr("Succeeded", "Stage")})},
			{graph("Ordering violations (sweeper)", []awscloudwatch.IMetric{expr("OrderingViolations", "")}), graph("SES events recorded by type", []awscloudwatch.IMetric{expr("ProviderEvents", "EventType")})},
			{graph("Held deliveries and evidence lag (s)", []awscloudwatch.IMetric{
				awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{Expression: jsii.String(insightsAgg("MAX", "HeldDeliveries", "")), Period: five, Label: jsii.String("HeldDeliveries")}),
				awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{Expression: jsii.String(insightsAgg("MAX", "EvidenceLag", "")), Period: five, Label: jsii.String("EvidenceLag")})}),
				graph("Duplicate sends and resends without evidence", []awscloudwatch.IMetric{expr("DuplicateSends", ""), expr("ResentWithoutEvidence", "")})},
		},
	})
}
