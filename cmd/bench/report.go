package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/criticizer/criticizer/internal/cost"
)

type intakeRow struct {
	clients int
	crit    intakeResult
	peer    *intakeResult
}

type report struct {
	machine  string
	opts     options
	intake   []intakeRow
	pipeline *pipelineResult
	calls    []callsResult
	dep      deployment
	prices   cost.Prices
	// Section 7: intake capacity against the peer, model tokens.
	capCrit  *intakeCapacity
	capPeer  *intakeCapacity
	tokens   []tokenCount
	reruns   rerunTokens
	context  contextTokens
	sweep    *sweepResult
	sweepErr error
}

// perKind sums, over runs, the calls of one request kind per request of
// that kind, by "Service.Op".
type perKind struct {
	requests int
	ops      map[string]callCount
}

func aggregate(runs []intakeResult, kind string) perKind {
	pk := perKind{ops: map[string]callCount{}}
	for _, r := range runs {
		if kind == "dup" {
			pk.requests += r.Dup
		} else {
			pk.requests += r.Unique
		}
		for op, c := range r.Calls[kind] {
			t := pk.ops[op]
			t.Calls += c.Calls
			t.Items += c.Items
			t.MS += c.MS
			pk.ops[op] = t
		}
	}
	return pk
}

func (p perKind) per(v int64) float64 {
	if p.requests == 0 {
		return 0
	}
	return float64(v) / float64(p.requests)
}

// sums returns, per request: DynamoDB calls, DynamoDB write calls, items
// written, and all AWS calls.
func (p perKind) sums() (ddb, writes, items, all float64) {
	for op, c := range p.ops {
		svc, name, _ := strings.Cut(op, ".")
		all += p.per(c.Calls)
		if svc != "DynamoDB" {
			continue
		}
		ddb += p.per(c.Calls)
		items += p.per(c.Items)
		if isDynamoWrite(svc, name) {
			writes += p.per(c.Calls)
		}
	}
	return
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func (r report) print(w io.Writer) {
	o := r.opts
	fmt.Fprintf(w, "\nCriticizer benchmarks\nmachine: %s\n", r.machine)
	fmt.Fprintf(w, "stack:   DynamoDB Local, fauxqs (SQS, S3), aws-ses-v2-local on 127.0.0.1 (devstack exec), sharing the cores with the code measured\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }

	if len(r.intake) > 0 {
		fmt.Fprintf(w, "\n1. Intake: generic webhook (signed, diff_url), handler invoked in process, %d requests per level after %d warm-up, %.0f%% duplicates\n",
			o.requests, o.warmup, o.dupRatio*100)
		line("clients", "system", "req/s", "p50 ms", "p99 ms", "non-2xx", "")
		var crits, peers []intakeResult
		for _, row := range r.intake {
			c := row.crit
			crits = append(crits, c)
			line(fmt.Sprint(row.clients), "Criticizer", fmt.Sprintf("%.0f", c.RPS()), fmt.Sprintf("%.2f", c.P50MS), fmt.Sprintf("%.2f", c.P99MS), fmt.Sprint(c.Errors), "")
			if row.peer != nil {
				p := *row.peer
				peers = append(peers, p)
				line("", "Powertools", fmt.Sprintf("%.0f", p.RPS()), fmt.Sprintf("%.2f", p.P50MS), fmt.Sprintf("%.2f", p.P99MS), fmt.Sprint(p.Errors), "")
				line("", "Criticizer/Powertools", ratio(c.RPS(), p.RPS()), ratio(c.P50MS, p.P50MS), ratio(c.P99MS, p.P99MS), "", "target req/s >= 2.00")
			}
		}
		tw.Flush()

		fmt.Fprintf(w, "\n2. Intake AWS calls per request (all levels; calls made, items = DynamoDB items a successful write wrote)\n")
		cu, cd := aggregate(crits, "unique"), aggregate(crits, "dup")
		pu, pd := aggregate(peers, "unique"), aggregate(peers, "dup")
		ops := map[string]bool{}
		for _, pk := range []perKind{cu, cd, pu, pd} {
			for op := range pk.ops {
				ops[op] = true
			}
		}
		names := make([]string, 0, len(ops))
		for op := range ops {
			names = append(names, op)
		}
		sort.Strings(names)
		line("", "Criticizer unique", "dup", "Powertools unique", "dup", "")
		cell := func(pk perKind, op string) string {
			if pk.requests == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", pk.per(pk.ops[op].Calls))
		}
		for _, op := range names {
			line(op, cell(cu, op), cell(cd, op), cell(pu, op), cell(pd, op), "")
		}
		// What one call of each kind took at the lowest concurrency, where
		// nothing queues: the emulator's own time per call.
		low := r.intake[0]
		for _, row := range r.intake {
			if row.clients < low.clients {
				low = row
			}
		}
		callMS := func(res *intakeResult, op string) string {
			if res == nil {
				return "-"
			}
			var n int64
			var t float64
			for _, kind := range []string{"unique", "dup"} {
				n += res.Calls[kind][op].Calls
				t += res.Calls[kind][op].MS
			}
			if n == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f", t/float64(n))
		}
		for _, op := range names {
			line(fmt.Sprintf("  mean ms per %s (%d client)", op, low.clients), callMS(&low.crit, op), "", callMS(low.peer, op), "", "")
		}
		cuD, cuW, cuI, cuA := cu.sums()
		cdD, cdW, cdI, cdA := cd.sums()
		puD, puW, puI, puA := pu.sums()
		pdD, pdW, pdI, pdA := pd.sums()
		f := func(v float64) string { return fmt.Sprintf("%.2f", v) }
		line("DynamoDB write calls", f(cuW), f(cdW), f(puW), f(pdW), "")
		line("DynamoDB items written", f(cuI), f(cdI), f(puI), f(pdI), "")
		line("DynamoDB calls", f(cuD), f(cdD), f(puD), f(pdD), "")
		line("all AWS calls", f(cuA), f(cdA), f(puA), f(pdA), "")
		tw.Flush()
		if len(peers) > 0 {
			fmt.Fprintf(w, "   Criticizer/Powertools per unique request: DynamoDB write calls %s (target <= 0.50), items written %s, DynamoDB calls %s\n",
				ratio(cuW, puW), ratio(cuI, puI), ratio(cuD, puD))
			fmt.Fprintf(w, "   per duplicate: DynamoDB calls %s, all AWS calls %s; per request (mix): DynamoDB calls %s\n",
				ratio(cdD, pdD), ratio(cdA, pdA), ratio(mix(cuD, cdD, cu.requests, cd.requests), mix(puD, pdD, pu.requests, pd.requests)))
		}
	}

	if p := r.pipeline; p != nil {
		fmt.Fprintf(w, "\n3. Pipeline: webhook to email, offline critic, %d webhooks at %.0f/s, %d recipient(s), %d poller(s) per stage\n",
			p.Webhooks, o.rate, o.pipeRcpts, o.pollers)
		line("emails sent", "in SES store", "p50 ms", "p99 ms", "max ms", "run s", "")
		line(fmt.Sprint(p.Emails), fmt.Sprint(p.InStore), fmt.Sprintf("%.0f", ms(p.P50)), fmt.Sprintf("%.0f", ms(p.P99)), fmt.Sprintf("%.0f", ms(p.Max)),
			fmt.Sprintf("%.1f", p.Elapsed.Seconds()), "")
		tw.Flush()
	}

	if len(r.calls) > 0 {
		r.printCalls(w)
		rcs := printCost(w, r.calls, r.dep, r.prices)
		if err := printStepFunctions(w, rcs, r.prices); err != nil {
			fmt.Fprintf(w, "   step functions: %v\n", err)
		}
	}
	if r.capCrit != nil {
		printIntakeCapacity(w, *r.capCrit, r.capPeer, cost.USEast1())
	}
	if len(r.tokens) > 0 {
		printTokens(w, r.tokens, r.reruns, r.context)
	}
	if r.sweep != nil {
		printSweep(w, *r.sweep)
	}
	if r.sweepErr != nil {
		fmt.Fprintf(w, "\n8. One sweep's reads: failed: %v\n", r.sweepErr)
	}
}

func mix(u, d float64, nu, nd int) float64 {
	if nu+nd == 0 {
		return 0
	}
	return (u*float64(nu) + d*float64(nd)) / float64(nu+nd)
}

// minimum is the design's floor per job with r recipients, by
// "Service.Op", for a generic webhook with an inline diff (see
// docs/benchmarks.md for the derivation).
func minimum(r int) map[string]float64 {
	return map[string]float64{
		"DynamoDB.TransactWriteItems": 1,                // intake: job + idempotency record + changelist head
		"DynamoDB.GetItem":            5,                // each stage reads the job, notify its critique too (R-COST-6); notify its thread title (R-THREAD-1); an explicit version reads no changelist head (R-RERUN-2)
		"DynamoDB.BatchGetItem":       1,                // notify: every recipient's unsubscribe/suppression standing (a later version: and their hidden findings, R-VOTE-3, and their mutes, R-REPLY-7)
		"DynamoDB.UpdateItem":         5 + 3*float64(r), // fetch, llm advance; llm's critique item (R-COST-6); notify: the diff's versions (R-QUIET-1), finalize; per recipient: rate-limit slot, claim, mark
		"DynamoDB.PutItem":            2 * float64(r),   // per recipient: the delivery row's message item, then the row (R-COST-5)
		"S3.PutObject":                1,                // intake stores the inline diff
		"S3.GetObject":                1,                // llm reads it
		"SQS.SendMessage":             3,                // intake->fetch, fetch->llm, llm->notify
		"SESv2.SendEmail":             float64(r),       // one per recipient
	}
}

func (r report) printCalls(w io.Writer) {
	fmt.Fprintf(w, "\n4. AWS calls per delivered notification (every client of every function counted; generic webhook, inline diff)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	head := []string{"call"}
	for _, c := range r.calls {
		head = append(head, fmt.Sprintf("%d rcpt", c.Recipients), "min")
	}
	line(append(head, "")...)
	ops := map[string]bool{}
	per := make([]map[string]float64, len(r.calls))
	var esm, idle []float64
	for i, c := range r.calls {
		per[i] = map[string]float64{}
		var e, rcv float64
		for k, v := range c.Snap {
			op := k.Service + "." + k.Op
			n := float64(v.Calls) / float64(c.Notifications)
			switch {
			case k.Tag == "feedback" || k.Tag == "ses":
				// The evidence path: priced in section 6, not a call of
				// the delivery path this section counts.
				continue
			case k.Tag == "" && k.Op == "ReceiveMessage":
				rcv += n
			case k.Tag == "" && (k.Op == "DeleteMessageBatch" || k.Op == "DeleteMessage" || k.Op == "ChangeMessageVisibility"):
				e += n
			default:
				per[i][op] += n
				ops[op] = true
			}
		}
		esm, idle = append(esm, e), append(idle, rcv)
		for op := range minimum(c.Recipients) {
			ops[op] = true
		}
	}
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	totals := make([]float64, len(r.calls))
	mins := make([]float64, len(r.calls))
	for _, op := range names {
		cells := []string{op}
		for i, c := range r.calls {
			m := minimum(c.Recipients)[op] / float64(c.Recipients)
			cells = append(cells, fmt.Sprintf("%.2f", per[i][op]), fmt.Sprintf("%.2f", m))
			totals[i] += per[i][op]
			mins[i] += m
		}
		line(append(cells, "")...)
	}
	cells := []string{"total (functions)"}
	for i := range r.calls {
		cells = append(cells, fmt.Sprintf("%.2f", totals[i]), fmt.Sprintf("%.2f", mins[i]))
	}
	line(append(cells, "")...)
	cells = []string{"measured / min"}
	for i := range r.calls {
		cells = append(cells, fmt.Sprintf("%.2f", totals[i]/mins[i]), "")
	}
	line(append(cells, "target <= 1.20")...)
	cells = []string{"SQS delete (event source mapping)"}
	for i := range r.calls {
		cells = append(cells, fmt.Sprintf("%.2f", esm[i]), "")
	}
	line(append(cells, "")...)
	cells = []string{"SQS ReceiveMessage (pollers, incl. idle)"}
	for i := range r.calls {
		cells = append(cells, fmt.Sprintf("%.2f", idle[i]), "")
	}
	line(append(cells, "")...)
	tw.Flush()
	fmt.Fprintf(w, "   %s\n", callsNote(r.calls))
}

func callsNote(calls []callsResult) string {
	var parts []string
	for _, c := range calls {
		parts = append(parts, fmt.Sprintf("%d rcpt: %d jobs, %d notifications", c.Recipients, c.Jobs, c.Notifications))
	}
	return strings.Join(parts, "; ") + "; SQS polling and deletes are Lambda's event source mapping in AWS, not the functions' calls"
}
