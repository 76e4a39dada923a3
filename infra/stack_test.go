package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

// consumers maps each queue's logical id to the function consuming it
// through an event source mapping.
func (s *synthesized) consumers(t *testing.T) map[string]string {
	out := map[string]string{}
	for id, m := range s.resources("AWS::Lambda::EventSourceMapping") {
		q, fn := refID(props(m)["EventSourceArn"]), refID(props(m)["FunctionName"])
		if q == "" || fn == "" {
			t.Fatalf("%s: cannot resolve queue/function: %v", id, props(m))
		}
		out[q] = fn
	}
	return out
}

func TestFunctions(t *testing.T) {
	s := synth(t)
	fns := s.resources("AWS::Lambda::Function")
	var want []string
	for _, f := range functionSpecs {
		want = append(want, FunctionID(f.Name))
	}
	sort.Strings(want)
	if got := sortedKeys(fns); !slices.Equal(got, want) {
		t.Fatalf("functions = %v, want %v", got, want)
	}
	for _, f := range functionSpecs {
		p := props(fns[FunctionID(f.Name)])
		check := func(what string, got, want any) {
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %s = %v, want %v", f.Name, what, got, want)
			}
		}
		check("Runtime", p["Runtime"], "provided.al2023")
		check("Architectures", strs(p["Architectures"]), []string{"arm64"})
		check("Handler", p["Handler"], "bootstrap")
		check("MemorySize", num(p["MemorySize"]), f.Memory)
		check("Timeout", num(p["Timeout"]), f.Timeout)
		// Tracing is off: nothing in the code is instrumented, so an
		// active trace would stop at each Lambda (docs/deploy.md, "Tracing").
		check("TracingConfig", p["TracingConfig"], nil)
		check("LoggingConfig.LogFormat", get(p, "LoggingConfig", "LogFormat"), "JSON")
		if refID(get(p, "LoggingConfig", "LogGroup")) == "" {
			t.Errorf("%s: no log group of its own", f.Name)
		}
		// No reservation by default: reserving fails the deploy on an
		// account at the default concurrency quota (10).
		if p["ReservedConcurrentExecutions"] != nil {
			t.Errorf("%s: reserved concurrency %v by default", f.Name, p["ReservedConcurrentExecutions"])
		}
		// The asset is the function's bootstrap directory.
		if meta := render(get(fns[FunctionID(f.Name)], "Metadata", "aws:asset:path")); meta != "<nil>" && meta != "" &&
			!strings.Contains(meta, "asset.") {
			t.Errorf("%s: asset path %s", f.Name, meta)
		}
	}
}

// TestAssetDirContext: the asset directory comes from context, and a
// missing build fails synth with what to do instead of a jsii stack trace.
func TestAssetDirContext(t *testing.T) {
	synth(t) // the jsii runtime up
	dir := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{CtxAssetDir: dir}})
	_, err := Build(app, "Empty", nil)
	if err == nil || !strings.Contains(err.Error(), "make build") || !strings.Contains(err.Error(), filepath.Join(dir, FnIntake, "bootstrap")) {
		t.Errorf("Build over an empty asset dir: %v, want an error naming the missing bootstrap and make build", err)
	}
}

func TestConfigFromContext(t *testing.T) {
	synth(t)
	cases := []struct {
		ctx      map[string]any
		mailFrom string
		identity string
		err      string
	}{
		{ctx: map[string]any{}, mailFrom: DefaultMailFrom, identity: "example.com"},
		{ctx: map[string]any{CtxMailFrom: "Reviews <r@mail.example.net>"}, mailFrom: "Reviews <r@mail.example.net>", identity: "mail.example.net"},
		{ctx: map[string]any{CtxMailFrom: "r@example.net", CtxSESIdentity: "r@example.net"}, mailFrom: "r@example.net", identity: "r@example.net"},
		{ctx: map[string]any{CtxMailFrom: "not an address"}, err: "mailFrom"},
		{ctx: map[string]any{CtxLogLevel: "verbose"}, err: "logLevel"},
	}
	for _, c := range cases {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &c.ctx})
		cfg, err := ConfigFromContext(app.Node())
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: err = %v, want one naming %s", c.ctx, err, c.err)
			}
		case err != nil:
			t.Errorf("%v: %v", c.ctx, err)
		case cfg.MailFrom != c.mailFrom || cfg.SESIdentity != c.identity:
			t.Errorf("%v: mailFrom %q identity %q, want %q %q", c.ctx, cfg.MailFrom, cfg.SESIdentity, c.mailFrom, c.identity)
		}
	}
}

func TestQueues(t *testing.T) {
	s := synth(t)
	queues := s.resources("AWS::SQS::Queue")
	consumers := s.consumers(t)
	fns := s.resources("AWS::Lambda::Function")
	dlqs := map[string]string{} // DLQ -> its source
	for id, q := range queues {
		p := props(q)
		if p["SqsManagedSseEnabled"] != true && p["KmsMasterKeyId"] == nil {
			t.Errorf("%s: no server-side encryption", id)
		}
		if p["RedrivePolicy"] == nil {
			continue
		}
		dlq := refID(get(p, "RedrivePolicy", "deadLetterTargetArn"))
		if n := num(get(p, "RedrivePolicy", "maxReceiveCount")); n != MaxReceiveCount {
			t.Errorf("%s: maxReceiveCount %v, want %d", id, n, MaxReceiveCount)
		}
		dlqs[dlq] = id
		fn, ok := consumers[id]
		if !ok {
			t.Errorf("%s: no consumer", id)
			continue
		}
		timeout := num(props(fns[fn])["Timeout"])
		window := num(props(s.esmOf(t, id))["MaximumBatchingWindowInSeconds"])
		if vt := num(p["VisibilityTimeout"]); vt < 6*timeout+window {
			t.Errorf("%s: visibility timeout %vs < 6 x %s's timeout %vs + batch window %vs", id, vt, fn, timeout, window)
		}
		if r := num(p["MessageRetentionPeriod"]); r >= num(props(queues[dlq])["MessageRetentionPeriod"]) {
			// A standard queue's message keeps its original enqueue time in the DLQ.
			t.Errorf("%s: retention %vs not shorter than its DLQ's", id, r)
		}
	}
	for id, q := range queues {
		p := props(q)
		src, isDLQ := dlqs[id]
		if !isDLQ && p["RedrivePolicy"] == nil {
			t.Errorf("%s: neither has a redrive policy nor is a DLQ", id)
			continue
		}
		if !isDLQ {
			continue
		}
		if r := num(p["MessageRetentionPeriod"]); r != 14*24*3600 {
			t.Errorf("%s: DLQ retention %vs, want 14 days", id, r)
		}
		if got := render(get(p, "RedriveAllowPolicy", "redrivePermission")); got != "byQueue" {
			t.Errorf("%s: redrive allow policy %v, want byQueue", id, get(p, "RedriveAllowPolicy"))
		}
		allowed := strs(get(p, "RedriveAllowPolicy", "sourceQueueArns"))
		srcName := render(get(props(queues[src]), "QueueName"))
		if len(allowed) != 1 || !strings.HasSuffix(allowed[0], ":"+srcName) {
			t.Errorf("%s: redrive allowed from %v, want only its source %s (%s)", id, allowed, src, srcName)
		}
	}
	// Exactly the stage queues plus feedback, each with a DLQ.
	var want []string
	for _, q := range []string{QFetch, QLLM, QNotify, QFeedback} {
		want = append(want, QueueID(q), DLQID(q))
	}
	sort.Strings(want)
	if got := sortedKeys(queues); !slices.Equal(got, want) {
		t.Errorf("queues = %v, want %v", got, want)
	}
	// enforceSSL: every queue's policy denies requests without TLS.
	secure := map[string]bool{}
	for _, qp := range s.resources("AWS::SQS::QueuePolicy") {
		for _, st := range get(props(qp), "PolicyDocument", "Statement").([]any) {
			if get(st, "Effect") == "Deny" && render(get(st, "Condition", "Bool", "aws:SecureTransport")) == "false" {
				for _, q := range strs(props(qp)["Queues"]) {
					secure[refs(q)[0]] = true
				}
			}
		}
	}
	for id := range queues {
		if !secure[id] {
			t.Errorf("%s: no policy denying non-TLS requests", id)
		}
	}
}

func (s *synthesized) esmOf(t *testing.T, queue string) map[string]any {
	for _, m := range s.resources("AWS::Lambda::EventSourceMapping") {
		if refID(props(m)["EventSourceArn"]) == queue {
			return m
		}
	}
	t.Fatalf("no event source mapping for %s", queue)
	return nil
}

func TestEventSourceMappings(t *testing.T) {
	s := synth(t)
	esms := s.resources("AWS::Lambda::EventSourceMapping")
	want := map[string]string{} // function -> queue
	for _, f := range functionSpecs {
		if f.Queue != "" {
			want[FunctionID(f.Name)] = QueueID(f.Queue)
		}
	}
	got := map[string]string{}
	batch := map[string]float64{} // function -> batch size
	for _, f := range functionSpecs {
		batch[FunctionID(f.Name)] = f.batchSize()
	}
	for id, m := range esms {
		p := props(m)
		fn := refID(p["FunctionName"])
		got[fn] = refID(p["EventSourceArn"])
		if !slices.Contains(strs(p["FunctionResponseTypes"]), "ReportBatchItemFailures") {
			t.Errorf("%s: FunctionResponseTypes %v lacks ReportBatchItemFailures", id, p["FunctionResponseTypes"])
		}
		if num(p["BatchSize"]) != batch[fn] || num(p["MaximumBatchingWindowInSeconds"]) != BatchWindowSeconds {
			t.Errorf("%s: batch %v window %v, want %v and %ds", id, p["BatchSize"], p["MaximumBatchingWindowInSeconds"], batch[fn], BatchWindowSeconds)
		}
	}
	if batch[FunctionID(FnLLM)] != 1 {
		t.Errorf("llm batch %v: one slow model call per invocation (R-STAGE-9)", batch[FunctionID(FnLLM)])
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("event sources = %v, want %v", got, want)
	}
	// notify's pollers never outrun its reserved concurrency.
	n := props(s.esmOf(t, QueueID(QNotify)))
	if mc := num(get(n, "ScalingConfig", "MaximumConcurrency")); mc < 2 || mc > 5 {
		t.Errorf("notify MaximumConcurrency %v, want 2..5 (reserved concurrency 5)", mc)
	}
}

func TestTables(t *testing.T) {
	s := synth(t)
	tables := s.resources("AWS::DynamoDB::Table")
	if got := sortedKeys(tables); !slices.Equal(got, []string{IDDeliveriesTable, IDJobsTable}) {
		t.Fatalf("tables = %v", got)
	}
	keys := map[string]string{IDJobsTable: "pk", IDDeliveriesTable: "delivery_id"}
	for id, tb := range tables {
		p := props(tb)
		if got := render(get(p, "KeySchema", 0, "AttributeName")); got != keys[id] || len(p["KeySchema"].([]any)) != 1 {
			t.Errorf("%s: key schema %v, want partition key %s only", id, p["KeySchema"], keys[id])
		}
		if get(p, "AttributeDefinitions", 0, "AttributeType") != "S" {
			t.Errorf("%s: partition key is not a string", id)
		}
		if p["BillingMode"] != "PAY_PER_REQUEST" {
			t.Errorf("%s: billing %v", id, p["BillingMode"])
		}
		if get(p, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled") != true {
			t.Errorf("%s: no point-in-time recovery", id)
		}
		if p["DeletionProtectionEnabled"] != true {
			t.Errorf("%s: no deletion protection", id)
		}
		if tb["DeletionPolicy"] != "Retain" || tb["UpdateReplacePolicy"] != "Retain" {
			t.Errorf("%s: removal policy %v/%v, want Retain", id, tb["DeletionPolicy"], tb["UpdateReplacePolicy"])
		}
	}
	ttl := get(props(tables[IDJobsTable]), "TimeToLiveSpecification")
	if get(ttl, "AttributeName") != "expires_at" || get(ttl, "Enabled") != true {
		t.Errorf("jobs TTL = %v, want expires_at enabled", ttl)
	}
	// The indexes: the sweeps' live indexes project keys only (a live
	// item's writes are not billed again for a copy of it; the sweeper
	// reads the few live items whole), the directory's whole entries (it
	// lists them).
	want := map[string]string{IndexLiveJobs: "KEYS_ONLY", IndexDirectory: "ALL", IndexLiveDeliveries: "KEYS_ONLY"}
	got := map[string]string{}
	for _, id := range []string{IDJobsTable, IDDeliveriesTable} {
		for _, gsi := range get(props(tables[id]), "GlobalSecondaryIndexes").([]any) {
			got[render(get(gsi, "IndexName"))] = render(get(gsi, "Projection", "ProjectionType"))
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("indexes and their projections %v, want %v", got, want)
	}
}

func TestPayloadBucket(t *testing.T) {
	s := synth(t)
	b := s.resource(t, IDPayloadBucket)
	p := props(b)
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if get(p, "PublicAccessBlockConfiguration", k) != true {
			t.Errorf("PublicAccessBlockConfiguration.%s not set", k)
		}
	}
	if get(p, "BucketEncryption", "ServerSideEncryptionConfiguration", 0, "ServerSideEncryptionByDefault", "SSEAlgorithm") == nil {
		t.Error("no default encryption")
	}
	if v := get(p, "VersioningConfiguration", "Status"); v == "Enabled" {
		t.Error("versioning on: content-addressed payloads need none")
	}
	rule := get(p, "LifecycleConfiguration", "Rules", 0)
	if num(get(rule, "ExpirationInDays")) != PayloadExpiryDays || get(rule, "Status") != "Enabled" {
		t.Errorf("lifecycle %v, want expiry after %d days", rule, PayloadExpiryDays)
	}
	denied := false
	for _, bp := range s.resources("AWS::S3::BucketPolicy") {
		for _, st := range get(props(bp), "PolicyDocument", "Statement").([]any) {
			if get(st, "Effect") == "Deny" && render(get(st, "Condition", "Bool", "aws:SecureTransport")) == "false" {
				denied = true
			}
		}
	}
	if !denied {
		t.Error("bucket policy does not deny non-TLS requests")
	}
}

func TestHTTPAPI(t *testing.T) {
	s := synth(t)
	integrations := s.resources("AWS::ApiGatewayV2::Integration")
	if len(integrations) != 1 {
		t.Fatalf("%d integrations, want 1 (intake)", len(integrations))
	}
	for id, in := range integrations {
		if refID(props(in)["IntegrationUri"]) != FunctionID(FnIntake) {
			t.Errorf("%s targets %v, want intake", id, props(in)["IntegrationUri"])
		}
	}
	got := map[string]string{}
	for _, r := range s.resources("AWS::ApiGatewayV2::Route") {
		got[render(props(r)["RouteKey"])] = render(props(r)["AuthorizationType"])
	}
	want := map[string]string{}
	for _, r := range Routes {
		want[r.Method+" "+r.Path] = map[bool]string{true: "AWS_IAM", false: "NONE"}[r.IAM]
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("routes = %v\nwant     %v", got, want)
	}
	for _, k := range []string{"POST /webhooks/generic", "POST /webhooks/github", "POST /webhooks/gitlab", "POST /webhooks/gerrit", "GET /jobs/{id}", "GET /healthz", "GET /unsubscribe/{token}",
		"HEAD /unsubscribe/{token}", "POST /unsubscribe/{token}", "POST /admin/rerun", "GET /admin/previews", "GET /admin/previews/{template+}",
		"GET /admin/directory", "PUT /admin/directory/{source}/{username}", "DELETE /admin/directory/{source}/{username}"} {
		if _, ok := got[k]; !ok {
			t.Errorf("route %s missing", k)
		}
		if strings.Contains(k, "/admin/") && got[k] != "AWS_IAM" {
			t.Errorf("%s: authorization %s, want AWS_IAM", k, got[k])
		}
	}
	// One route per source: HTTP API throttles each route on its own, so
	// a flood at one source leaves the others their whole rate.
	if _, shared := got["POST /webhooks/{source}"]; shared {
		t.Error("one webhook route for every source: a flood at one source throttles all")
	}
	stages := s.resources("AWS::ApiGatewayV2::Stage")
	if len(stages) != 1 {
		t.Fatalf("%d stages", len(stages))
	}
	for id, st := range stages {
		p := props(st)
		if p["StageName"] != "$default" || p["AutoDeploy"] != true {
			t.Errorf("%s: stage %v auto-deploy %v", id, p["StageName"], p["AutoDeploy"])
		}
		if num(get(p, "DefaultRouteSettings", "ThrottlingRateLimit")) <= 0 || num(get(p, "DefaultRouteSettings", "ThrottlingBurstLimit")) <= 0 {
			t.Errorf("%s: no default throttling: %v", id, p["DefaultRouteSettings"])
		}
		lg := refID(get(p, "AccessLogSettings", "DestinationArn"))
		if lg == "" || s.resource(t, lg)["Type"] != "AWS::Logs::LogGroup" {
			t.Errorf("%s: access logs go to %v, want a log group", id, get(p, "AccessLogSettings"))
		}
		if f := render(get(p, "AccessLogSettings", "Format")); !strings.Contains(f, "$context.requestId") || strings.Contains(f, "$context.path") {
			t.Errorf("%s: access log format %s: want the request id and no raw path (tokens)", id, f)
		}
	}
}

func TestSESEventsToFeedback(t *testing.T) {
	s := synth(t)
	dests := s.resources("AWS::SES::ConfigurationSetEventDestination")
	if len(dests) != 1 {
		t.Fatalf("%d event destinations", len(dests))
	}
	for id, d := range dests {
		p := props(d)
		if refID(p["ConfigurationSetName"]) != IDConfigurationSet {
			t.Errorf("%s: configuration set %v", id, p["ConfigurationSetName"])
		}
		got := strs(get(p, "EventDestination", "MatchingEventTypes"))
		sort.Strings(got)
		want := []string{"bounce", "complaint", "delivery", "deliveryDelay", "reject", "renderingFailure", "send"}
		if !slices.Equal(got, want) {
			t.Errorf("%s: events %v, want %v", id, got, want)
		}
		if refID(get(p, "EventDestination", "SnsDestination", "TopicARN")) != IDSESEventsTopic {
			t.Errorf("%s: destination %v", id, get(p, "EventDestination"))
		}
	}
	if refID(get(props(s.resource(t, IDSESEventsTopic)), "KmsMasterKeyId")) == "" {
		t.Error("SES events topic is not encrypted with the stack's key")
	}
	subs := s.resources("AWS::SNS::Subscription")
	ok := false
	for _, sub := range subs {
		p := props(sub)
		if refID(p["TopicArn"]) == IDSESEventsTopic && p["Protocol"] == "sqs" && refID(p["Endpoint"]) == QueueID(QFeedback) && p["RawMessageDelivery"] == true {
			ok = true
		}
	}
	if !ok {
		t.Errorf("no raw SQS subscription of the feedback queue to the SES events topic: %v", subs)
	}
	if env := get(props(s.resource(t, FunctionID(FnNotify))), "Environment", "Variables"); render(get(env, EnvMailFrom)) != testMailFrom ||
		refID(get(env, EnvConfigurationSet)) != IDConfigurationSet {
		t.Errorf("notify env: mail from %v, configuration set %v", get(env, EnvMailFrom), get(env, EnvConfigurationSet))
	}
}

func TestSweeperSchedule(t *testing.T) {
	s := synth(t)
	rules := s.resources("AWS::Events::Rule")
	if len(rules) != 1 {
		t.Fatalf("%d rules", len(rules))
	}
	for id, r := range rules {
		p := props(r)
		if p["ScheduleExpression"] != "rate(1 minute)" || p["State"] == "DISABLED" {
			t.Errorf("%s: schedule %v state %v", id, p["ScheduleExpression"], p["State"])
		}
		targets := p["Targets"].([]any)
		if len(targets) != 1 || refID(get(targets[0], "Arn")) != FunctionID(FnSweeper) {
			t.Errorf("%s: targets %v, want the sweeper", id, targets)
		}
	}
}

func TestAlarms(t *testing.T) {
	s := synth(t)
	alarms := s.resources("AWS::CloudWatch::Alarm")
	topic := ""
	for id, tp := range s.resources("AWS::SNS::Topic") {
		if strings.HasPrefix(id, "AlarmTopic") {
			topic = id
			if refID(props(tp)["KmsMasterKeyId"]) == "" {
				t.Error("alarm topic not encrypted")
			}
		}
	}
	type found struct{ metric, dim, expr string }
	var all []found
	for id, a := range alarms {
		p := props(a)
		acts := strs(p["AlarmActions"])
		if len(acts) != 1 || refs(acts[0])[0] != topic {
			t.Errorf("%s: actions %v, want the alarm topic %s", id, acts, topic)
		}
		if p["ComparisonOperator"] != "GreaterThanThreshold" {
			t.Errorf("%s: %v", id, p["ComparisonOperator"])
		}
		m := p // a single metric, or one metric query (CDK's form with a label)
		if ms := get(p, "Metrics", 0, "MetricStat", "Metric"); ms != nil {
			m = ms.(map[string]any)
		}
		f := found{metric: render(m["Namespace"]) + "/" + render(m["MetricName"])}
		if d, ok := get(m, "Dimensions", 0, "Value").(map[string]any); ok {
			f.dim = refID(d)
		}
		if e := get(p, "Metrics", 0, "Expression"); e != nil {
			f.expr = render(e)
			if num(get(p, "Metrics", 0, "Period")) <= 0 {
				t.Errorf("%s: Metrics Insights query without a period", id)
			}
		}
		f.metric += fmt.Sprintf(">%v", num(p["Threshold"]))
		all = append(all, f)
	}
	has := func(metric, dim, expr string) {
		t.Helper()
		for _, f := range all {
			if f.metric == metric && f.dim == dim && f.expr == expr {
				return
			}
		}
		t.Errorf("no alarm on %s %s %s", metric, dim, expr)
	}
	for _, q := range []string{QFetch, QLLM, QNotify, QFeedback} {
		has("AWS/SQS/ApproximateNumberOfMessagesVisible>0", DLQID(q), "")
		has(fmt.Sprintf("AWS/SQS/ApproximateAgeOfOldestMessage>%d", OldestMessageAlarmSeconds), QueueID(q), "")
	}
	for _, m := range []string{"DeadLetters", "Escalations", "OrderingViolations", "DuplicateSends", "ResentWithoutEvidence", "SendingPaused"} {
		has("<nil>/<nil>>0", "", fmt.Sprintf(`SELECT SUM(%s) FROM "Criticizer"`, m))
	}
	has("<nil>/<nil>>0", "", `SELECT MAX(HeldDeliveries) FROM "Criticizer"`)
	has(fmt.Sprintf("<nil>/<nil>>%d", EvidenceLagAlarmSeconds), "", `SELECT MAX(EvidenceLag) FROM "Criticizer"`)
	for id, a := range alarms {
		if strings.HasPrefix(id, "EvidenceLag") && (props(a)["TreatMissingData"] != "breaching" || num(props(a)["EvaluationPeriods"]) != 2) {
			t.Errorf("EvidenceLag alarm: missing data %v, periods %v; want breaching over 2 periods (the sweeper emits it every run)",
				props(a)["TreatMissingData"], props(a)["EvaluationPeriods"])
		}
	}
	has("AWS/SES/Reputation.BounceRate>0.05", "", "")
	has("AWS/SES/Reputation.ComplaintRate>0.001", "", "")
	for _, f := range functionSpecs {
		has("AWS/Lambda/Errors>0", FunctionID(f.Name), "")
	}
	if len(s.resources("AWS::CloudWatch::Dashboard")) != 1 {
		t.Error("no dashboard")
	}
}

// TestStatefulLogicalIDs: the stateful resources keep pinned logical ids
// (shared with template.yaml), so refactoring the CDK code never replaces
// a table, bucket, secret or configuration set.
func TestStatefulLogicalIDs(t *testing.T) {
	s := synth(t)
	for _, id := range []string{IDJobsTable, IDDeliveriesTable, IDPayloadBucket, IDWebhookSecret, IDUnsubscribeSecret,
		IDFetchSecret, IDCriticSecret, IDConfigurationSet} {
		s.resource(t, id)
	}
}
