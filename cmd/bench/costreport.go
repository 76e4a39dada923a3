package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/criticizer/criticizer/internal/cost"
)

// What the bench cannot measure locally, written out: the lines Lambda's
// platform logs for every invocation in the JSON log format (default
// system log level INFO: platform.start and platform.report), with
// typical values. The access log line of each API request is the CDK
// app's format with typical values (accessLogLine).
const (
	platformStart  = `{"time":"2026-11-24T14:48:40.112Z","type":"platform.start","record":{"requestId":"6d4a1e2c-3c0e-4b5f-9a44-0f6a2f4b8e21","version":"$LATEST"}}`
	platformReport = `{"time":"2026-11-24T14:48:40.160Z","type":"platform.report","record":{"requestId":"6d4a1e2c-3c0e-4b5f-9a44-0f6a2f4b8e21","metrics":{"durationMs":47.61,"billedDurationMs":48,"memorySizeMB":256,"maxMemoryUsedMB":24},"status":"success"}}`
)

// accessLogLine is one access log line of the HTTP API: the deployed
// format with the values of a webhook's request.
func accessLogLine(format string) string {
	vals := map[string]string{
		"$context.requestId": "Yk2a7gdzIAMEbXg=", "$context.identity.sourceIp": "192.0.2.10",
		"$context.requestTime": "24/Nov/2026:14:48:40 +0000", "$context.routeKey": "POST /webhooks/generic",
		"$context.status": "202", "$context.protocol": "HTTP/1.1", "$context.responseLength": "212",
		"$context.responseLatency": "48", "$context.integrationLatency": "46",
		"$context.integrationErrorMessage": "-", "$context.identity.userArn": "-",
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	// Longest first: $context.status must not eat a prefix of another.
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		format = strings.ReplaceAll(format, k, vals[k])
	}
	return format + "\n"
}

// Pseudo-functions of the cost breakdown: what the event source mapping
// (the pollers) does, what SES's event publishing costs, what is stored.
const (
	fnESM     = "event source mapping"
	fnSES     = "SES events (SNS)"
	fnStorage = "storage (items kept)"
)

// reviewCost is one recipient count's consumption per review, by
// function, and what was left out of it.
type reviewCost struct {
	Recipients int
	ByFn       map[string]cost.Usage
	// EmptyReceives per review: the pollers' idle long polls, a fixed
	// cost of the event source mapping, not the review's.
	EmptyReceives float64
	// FailedWrites per review, each priced as one write unit (DynamoDB
	// reports no capacity for a write that failed its condition).
	FailedWrites float64
	// Per review, measured.
	IndexWriteUnits float64
	// RuleWriteUnits and RuleIndexWriteUnits per review: the same writes
	// priced by AWS's published rules (ruleMeter), failed ones included.
	RuleWriteUnits, RuleIndexWriteUnits float64
	Invocations                         map[string]invocations
	// Writes are DynamoDB write calls per review by "function Op".
	Writes map[string]callCount
	Stored storage
	Jobs   int
}

func (rc reviewCost) total() cost.Usage {
	var t cost.Usage
	for _, u := range rc.ByFn {
		t = t.Add(u)
	}
	return t
}

// costOf turns a run's measurements into usage per review.
func costOf(c callsResult, dep deployment) reviewCost {
	per := 1 / float64(c.Jobs)
	rc := reviewCost{Recipients: c.Recipients, ByFn: map[string]cost.Usage{}, Invocations: c.Inv, Writes: map[string]callCount{},
		Stored: c.Stored, Jobs: c.Jobs}
	add := func(fn string, u cost.Usage) { rc.ByFn[fn] = rc.ByFn[fn].Add(u.Scale(per)) }
	for k, v := range c.Snap {
		fn := k.Tag
		switch fn {
		case "":
			fn = fnESM
		case "ses":
			fn = fnSES
		}
		var u cost.Usage
		switch k.Service {
		case "DynamoDB":
			u.DynamoDBReadUnits = v.ReadUnits
			u.DynamoDBWriteUnits = v.WriteUnits + float64(v.FailedWrites)
			rc.FailedWrites += float64(v.FailedWrites) * per
			rc.IndexWriteUnits += v.IndexWriteUnits * per
			rc.RuleWriteUnits += v.RuleWriteUnits * per
			rc.RuleIndexWriteUnits += v.RuleIndexWriteUnits * per
			if isDynamoWrite(k.Service, k.Op) {
				wc := rc.Writes[fn+" "+k.Op]
				wc.add(v)
				rc.Writes[fn+" "+k.Op] = wc
			}
		case "SQS":
			u.SQSRequests = v.Requests
			rc.EmptyReceives += float64(v.Empty) * per
		case "SNS":
			u.SNSPublishes = v.Requests
			// SNS delivers each publish to the feedback queue: no SNS
			// charge, but the message enters SQS (counted as a request).
			u.SQSRequests = v.Requests
		case "S3":
			switch k.Op {
			case "PutObject", "CopyObject", "ListObjectsV2":
				u.S3Puts = float64(v.Calls)
				u.S3GBMonths = cost.GBMonths(float64(v.Bytes), float64(dep.PayloadExpiryDays))
			default:
				u.S3Gets = float64(v.Calls)
			}
		case "SESv2":
			if k.Op == "SendEmail" {
				u.SESMessages = float64(v.Recipients)
				u.DataOutGB = float64(v.Bytes) / cost.GB
			}
		}
		add(fn, u)
	}
	platform := float64(len(platformStart) + len(platformReport) + 2)
	for fn, inv := range c.Inv {
		u := cost.Usage{LambdaRequests: float64(inv.Count), LambdaGBSeconds: float64(dep.MemoryMB[fn]) / 1024 * inv.BilledMS / 1000,
			LogGB: (float64(c.LogBytes[fn]) + platform*float64(inv.Count)) / cost.GB}
		if fn == "intake" {
			u.HTTPAPIRequests = float64(c.Jobs)
			u.LogGB += float64(c.Jobs) * float64(len(accessLogLine(dep.AccessLogFormat))) / cost.GB
		}
		add(fn, u)
	}
	for tag, b := range c.LogBytes {
		if _, ok := c.Inv[tag]; !ok && tag != "" {
			add(tag, cost.Usage{LogGB: float64(b) / cost.GB})
		}
	}
	add(fnStorage, cost.Usage{DynamoDBGBMonths: c.Stored.GBMonths})
	return rc
}

// fnOrder is the breakdown's row order.
func fnOrder(m map[string]cost.Usage) []string {
	rank := map[string]int{"intake": 0, "fetch": 1, "llm": 2, "notify": 3, fnSES: 4, "feedback": 5, fnESM: 6, fnStorage: 7}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, oki := rank[names[i]]
		rj, okj := rank[names[j]]
		if oki != okj {
			return oki
		}
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	return names
}

// printCost prints section 6: dollars per 1,000 reviews by service for
// each recipient count, the goal ratio, and the single-recipient review by
// function.
func printCost(w io.Writer, runs []callsResult, dep deployment, p cost.Prices) []reviewCost {
	var rcs []reviewCost
	for _, c := range runs {
		rcs = append(rcs, costOf(c, dep))
	}
	fmt.Fprintf(w, "\n6. Cost per 1,000 reviews, USD (%s list prices read %s, docs/benchmarks.md; consumption measured on the local stack:\n", p.Region, p.DynamoDBWrite.Taken)
	fmt.Fprintf(w, "   generic webhook with inline diff, offline critic, SES events on, reviews one after another; no free tier; model tokens apart)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	head := []string{"service"}
	bills := make([]cost.Bill, len(rcs))
	for i, rc := range rcs {
		head = append(head, fmt.Sprintf("%d rcpt", rc.Recipients))
		bills[i] = p.Price(rc.total())
	}
	line(append(head, "")...)
	for _, svc := range cost.Services() {
		cells, any := []string{svc}, false
		for _, b := range bills {
			v := b.ByService()[svc]
			any = any || v != 0
			cells = append(cells, fmt.Sprintf("%.4f", 1000*v))
		}
		if any {
			line(append(cells, "")...)
		}
	}
	cells := []string{"total"}
	for _, b := range bills {
		cells = append(cells, fmt.Sprintf("%.4f", 1000*b.Total()))
	}
	line(append(cells, "")...)
	cells = []string{"total / SES's charge"}
	for _, b := range bills {
		cells = append(cells, fmt.Sprintf("%.2f", cost.GoalRatio(b)))
	}
	line(append(cells, "goal <= 1.10 for 1 rcpt")...)
	tw.Flush()
	for i, rc := range rcs {
		if rc.Recipients != 1 {
			continue
		}
		b := bills[i]
		fmt.Fprintf(w, "   1 rcpt: infrastructure %.2f x SES's charge for its one email (goal <= 1.10: %s); everything but SES costs $%.4f per 1,000 reviews, the goal allows $%.4f\n",
			cost.GoalRatio(b), met(cost.GoalRatio(b) <= 1.1), 1000*b.Without(cost.SvcSES), 1000*0.1*b.ByService()[cost.SvcSES])
		var top []string
		for _, l := range b.Largest(6) {
			top = append(top, fmt.Sprintf("%s %s $%.4f", l.Service, l.Item, 1000*l.USD))
		}
		fmt.Fprintf(w, "   largest lines (1 rcpt, per 1,000 reviews): %s\n", strings.Join(top, "; "))
	}
	for _, rc := range rcs {
		printConsumption(w, rc, p)
	}
	return rcs
}

// printConsumption prints one recipient count's measured consumption per
// review, by function.
func printConsumption(w io.Writer, rc reviewCost, p cost.Prices) {
	fmt.Fprintf(w, "\n   %d rcpt, per review, by function (measured; Lambda GB-s at the deployed memory sizes; logs include Lambda's platform lines)\n", rc.Recipients)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	line("function", "RRU", "WRU", "SQS req", "SNS", "S3 put/get", "invocations", "GB-s", "log KB", "USD/1000", "")
	f := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", v)
	}
	var total cost.Usage
	for _, fn := range fnOrder(rc.ByFn) {
		u := rc.ByFn[fn]
		total = total.Add(u)
		s3 := "-"
		if u.S3Puts+u.S3Gets > 0 {
			s3 = fmt.Sprintf("%.0f/%.0f", u.S3Puts, u.S3Gets)
		}
		line(fn, f(u.DynamoDBReadUnits), f(u.DynamoDBWriteUnits), f(u.SQSRequests), f(u.SNSPublishes), s3, f(u.LambdaRequests),
			fmt.Sprintf("%.4f", u.LambdaGBSeconds), f(u.LogGB*cost.GB/1024), fmt.Sprintf("%.4f", 1000*p.Price(u).Total()), "")
	}
	line("total", f(total.DynamoDBReadUnits), f(total.DynamoDBWriteUnits), f(total.SQSRequests), f(total.SNSPublishes),
		fmt.Sprintf("%.0f/%.0f", total.S3Puts, total.S3Gets), f(total.LambdaRequests), fmt.Sprintf("%.4f", total.LambdaGBSeconds),
		f(total.LogGB*cost.GB/1024), fmt.Sprintf("%.4f", 1000*p.Price(total).Total()), "")
	tw.Flush()
	fmt.Fprintf(w, "   of the WRU, %.2f are index writes (LiveJobsByAge, LiveDeliveries); %.2f failed conditional writes priced at 1 WRU each; SES: %.0f message(s), %.1f KB each; not counted: %.1f idle receives per review (the event source mapping's fixed cost)\n",
		rc.IndexWriteUnits, rc.FailedWrites, total.SESMessages, total.DataOutGB*cost.GB/1024/max(total.SESMessages, 1), rc.EmptyReceives)
	keys := make([]string, 0, len(rc.Writes))
	for k := range rc.Writes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return rc.Writes[keys[i]].WriteUnits > rc.Writes[keys[j]].WriteUnits })
	var parts []string
	per := 1 / float64(rc.Jobs)
	for _, k := range keys {
		wc := rc.Writes[k]
		failed := ""
		if wc.FailedWrites > 0 {
			failed = fmt.Sprintf(", %.2f failed", float64(wc.FailedWrites)*per)
		}
		parts = append(parts, fmt.Sprintf("%s %.2f calls %.1f WRU (%.1f index%s)", k, float64(wc.Calls)*per, wc.WriteUnits*per, wc.IndexWriteUnits*per, failed))
	}
	fmt.Fprintf(w, "   DynamoDB writes per review: %s\n", strings.Join(parts, "; "))
	printRuleUnits(w, rc, total.DynamoDBWriteUnits, keys)
	kinds := make([]string, 0, len(rc.Stored.ByKind))
	for k := range rc.Stored.ByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts = parts[:0]
	for _, k := range kinds {
		sk := rc.Stored.ByKind[k]
		kept := ""
		if sk.Kept {
			kept = fmt.Sprintf(", no TTL: %d days", keptDays)
		}
		parts = append(parts, fmt.Sprintf("%s %.2f items of %.1f KB%s", k, float64(sk.Items)*per, float64(sk.Bytes)/float64(sk.Items)/1024, kept))
	}
	fmt.Fprintf(w, "   stored per review (item size with DynamoDB's 100-byte overhead, kept until its TTL): %s\n", strings.Join(parts, "; "))
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// printStepFunctions prints section 7a: the review on a Step Functions
// standard workflow (cost.ReviewMachine), its transitions per review, and
// what they cost beside the queues they would replace.
func printStepFunctions(w io.Writer, rcs []reviewCost, p cost.Prices) error {
	m := cost.ReviewMachine()
	fmt.Fprintf(w, "\n7a. The same review on a Step Functions standard workflow (internal/cost.ReviewMachine: Fetch, Critique, PrepareDeliveries,\n")
	fmt.Fprintf(w, "    a Map of one Send per recipient, Finalize, Done; every state entered counts, retries not): transitions against the queues' requests\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	line("recipients", "transitions", "USD/1000 transitions", "SQS req (measured)", "USD/1000 SQS", "transitions / SQS", "")
	for _, rc := range rcs {
		n, err := m.Transitions(rc.Recipients)
		if err != nil {
			return err
		}
		sf := p.StepFunctionsTransition.Of(float64(n))
		u := rc.total()
		sqs := p.SQSRequest.Of(u.SQSRequests)
		line(fmt.Sprint(rc.Recipients), fmt.Sprint(n), fmt.Sprintf("%.4f", 1000*sf), fmt.Sprintf("%.1f", u.SQSRequests), fmt.Sprintf("%.4f", 1000*sqs),
			fmt.Sprintf("%.1f", sf/sqs), "")
	}
	tw.Flush()
	fmt.Fprintf(w, "   the workflow would keep Lambda, DynamoDB, SES and the evidence path (SNS, the feedback queue); its transitions alone cost more than SES's email\n")
	return nil
}

// printIntakeCapacity prints section 7b: intake's DynamoDB capacity per
// request, measured through the capacity proxy, against the peer's.
func printIntakeCapacity(w io.Writer, crit intakeCapacity, peer *intakeCapacity, p cost.Prices) {
	fmt.Fprintf(w, "\n7b. Intake's DynamoDB capacity per request, Criticizer against the Powertools peer (%d unique generic webhooks, then each again;\n", crit.Requests)
	fmt.Fprintf(w, "    both through a proxy in front of DynamoDB Local that adds ReturnConsumedCapacity INDEXES to every request and reads the answers)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	line("", "WRU unique", "RRU unique", "WRU dup", "failed writes dup", "USD/1000 unique", "USD/1000 dup", "")
	row := func(name string, c intakeCapacity) {
		u := p.DynamoDBWrite.Of(c.UniqueWrite) + p.DynamoDBRead.Of(c.UniqueRead)
		// A write that failed its condition reports no capacity: priced
		// at its lower bound, one write unit.
		d := p.DynamoDBWrite.Of(c.DupWrite+c.DupFailed) + p.DynamoDBRead.Of(c.DupRead)
		line(name, fmt.Sprintf("%.2f", c.UniqueWrite), fmt.Sprintf("%.2f", c.UniqueRead), fmt.Sprintf("%.2f", c.DupWrite),
			fmt.Sprintf("%.2f", c.DupFailed), fmt.Sprintf("%.5f", 1000*u), fmt.Sprintf("%.5f", 1000*d), "")
	}
	row("Criticizer", crit)
	if peer != nil {
		row("Powertools", *peer)
	}
	tw.Flush()
	if peer != nil && peer.UniqueWrite > 0 {
		fmt.Fprintf(w, "   Criticizer/Powertools write units per unique request: %.2f (calls: 0.33, section 2); a duplicate's failed write bills at least 1 WRU (not reported)\n",
			crit.UniqueWrite/peer.UniqueWrite)
	}
}

// printRuleUnits sets the write units priced by AWS's published rules
// (ruleMeter) beside DynamoDB Local's figures (with failed writes at one
// unit each, as the table prices them), and names the writes where the
// two differ.
func printRuleUnits(w io.Writer, rc reviewCost, local float64, keys []string) {
	if rc.RuleWriteUnits == 0 {
		return
	}
	per := 1 / float64(rc.Jobs)
	var diff []string
	for _, k := range keys {
		wc := rc.Writes[k]
		l, r := (wc.WriteUnits+float64(wc.FailedWrites))*per, wc.RuleWriteUnits*per
		if math.Abs(l-r) >= 0.05 {
			diff = append(diff, fmt.Sprintf("%s %.1f local, %.1f by the rules", k, l, r))
		}
	}
	where := "nowhere"
	if len(diff) > 0 {
		where = strings.Join(diff, "; ")
	}
	fmt.Fprintf(w, "   write units by AWS's published rules (item sizes read before and after each write, per started KB; transactions 2x; each index entry written; a failed write the item's size): %.2f per review (%.2f index), DynamoDB Local %.2f; they differ at: %s\n",
		rc.RuleWriteUnits, rc.RuleIndexWriteUnits, local, where)
}
