package main

import (
	"slices"
	"sort"
	"strings"
	"testing"
)

// grant is one (action, resource) pair of a function's role.
type grant struct{ action, resource string }

// grants lists everything a function's role allows, from every policy
// attached to it, and fails on managed or inline policies of the role.
func (s *synthesized) grants(t *testing.T, fn string) []grant {
	t.Helper()
	role := refID(props(s.resource(t, FunctionID(fn)))["Role"])
	if role == "" {
		t.Fatalf("%s: no role", fn)
	}
	rp := props(s.resource(t, role))
	if rp["ManagedPolicyArns"] != nil || rp["Policies"] != nil {
		t.Errorf("%s: role has managed/inline policies %v %v; want only its own policy", fn, rp["ManagedPolicyArns"], rp["Policies"])
	}
	var out []grant
	for id, p := range s.resources("AWS::IAM::Policy") {
		attached := false
		for _, r := range strs(props(p)["Roles"]) {
			attached = attached || r == "${"+role+"}"
		}
		if !attached {
			continue
		}
		for _, st := range get(props(p), "PolicyDocument", "Statement").([]any) {
			if get(st, "Effect") != "Allow" || get(st, "NotAction") != nil || get(st, "NotResource") != nil {
				t.Errorf("%s: %s: unexpected statement %v", fn, id, st)
				continue
			}
			for _, a := range strs(get(st, "Action")) {
				for _, r := range strs(get(st, "Resource")) {
					out = append(out, grant{a, r})
				}
			}
		}
	}
	return out
}

// on returns the resources an action is granted on, sorted.
func on(gs []grant, action string) []string {
	var out []string
	for _, g := range gs {
		if g.action == action && !slices.Contains(out, g.resource) {
			out = append(out, g.resource)
		}
	}
	sort.Strings(out)
	return out
}

func ids(rs []string) []string {
	var out []string
	for _, r := range rs {
		out = append(out, refs(r)...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func arns(kind string, ids ...string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "${" + id + "." + kind + "}"
	}
	sort.Strings(out)
	return out
}

// access is one function's expected least-privilege grants, by logical id.
type access struct {
	send, consume []string // queues
	read, write   []string // tables
	// update are tables it may only UpdateItem (no read, no other write).
	update []string
	// items are tables it may only GetItem and UpdateItem, on its job's
	// items (the dynamodb:LeadingKeys condition).
	items []string
	// batch are tables it may BatchGetItem on keyed items only (fetch:
	// the directory's DIR# entries).
	batch []string
	s3    []string // object actions on diffs/*
	// quarantine: s3:PutObject under quarantine/ only (feedback,
	// R-EVIDENCE-10).
	quarantine bool
	secrets    []string // the secrets it may read, by logical id
	sendMail   bool
	// counters are queues whose counters it reads and nothing else there
	// (the sweeper: the feedback queue and its DLQ, internal/drain).
	counters []string
}

var wantAccess = map[string]access{
	// intake also reads the unsubscribe key: it verifies /unsubscribe/{token}
	// and records the preference (PREF#<id>) in the jobs table it already
	// writes.
	FnIntake: {send: []string{QueueID(QFetch)}, read: []string{IDDeliveriesTable, IDJobsTable}, write: []string{IDJobsTable},
		s3: []string{"s3:PutObject"}, secrets: []string{IDUnsubscribeSecret, IDWebhookSecret}},
	// fetch and llm: their job's items only; never a delete, never the
	// unsubscribe, suppression or idempotency records.
	FnFetch: {send: []string{DLQID(QFetch), QueueID(QFetch), QueueID(QLLM)}, consume: []string{QueueID(QFetch)}, items: []string{IDJobsTable},
		batch: []string{IDJobsTable},
		s3:    []string{"s3:GetObject", "s3:PutObject"}, secrets: []string{IDFetchSecret}},
	FnLLM: {send: []string{DLQID(QLLM), QueueID(QLLM), QueueID(QNotify)}, consume: []string{QueueID(QLLM)}, items: []string{IDJobsTable},
		s3: []string{"s3:GetObject"}, secrets: []string{IDCriticSecret}},
	// notify reads recipients' PREF#/SUPP# items with BatchGetItem on the
	// jobs table (already part of its read grant, checked below), and the
	// unsubscribe key to sign the links it puts in each email.
	FnNotify: {send: []string{DLQID(QNotify), QueueID(QNotify)}, consume: []string{QueueID(QNotify)}, read: []string{IDDeliveriesTable, IDJobsTable},
		write: []string{IDDeliveriesTable, IDJobsTable}, secrets: []string{IDUnsubscribeSecret}, sendMail: true},
	// feedback suppresses an address on a permanent bounce or a complaint:
	// an UpdateItem upsert of SUPP#<id> in the jobs table, and nothing else
	// there. A transient bounce reopens the job (a conditional UpdateItem)
	// and enqueues it at notify: SendMessage on the notify queue only.
	FnFeedback: {send: []string{QueueID(QNotify)}, consume: []string{QueueID(QFeedback)}, read: []string{IDDeliveriesTable},
		write: []string{IDDeliveriesTable}, update: []string{IDJobsTable}, quarantine: true},
	// The sweeper also reads the feedback queue's and its DLQ's counters
	// (GetQueueAttributes only) to find the evidence path drained.
	FnSweeper: {send: []string{QueueID(QFetch), QueueID(QLLM), QueueID(QNotify)}, read: []string{IDDeliveriesTable, IDJobsTable},
		write: []string{IDDeliveriesTable, IDJobsTable}, counters: []string{DLQID(QFeedback), QueueID(QFeedback)}},
}

func TestLeastPrivilege(t *testing.T) {
	s := synth(t)
	for _, f := range functionSpecs {
		t.Run(f.Name, func(t *testing.T) {
			w, ok := wantAccess[f.Name]
			if !ok {
				t.Fatalf("no expected access for %s", f.Name)
			}
			gs := s.grants(t, f.Name)
			eq := func(what string, got, want []string) {
				t.Helper()
				sort.Strings(want)
				if !slices.Equal(got, want) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			eq("sqs:SendMessage on", on(gs, "sqs:SendMessage"), arns("Arn", w.send...))
			// GetQueueAttributes comes with every send and consume grant;
			// on any other queue, only as the counters the function reads.
			eq("sqs:GetQueueAttributes on", on(gs, "sqs:GetQueueAttributes"),
				arns("Arn", slices.Compact(slices.Sorted(slices.Values(slices.Concat(w.send, w.consume, w.counters))))...))
			for _, a := range []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"} {
				eq(a+" on", on(gs, a), arns("Arn", w.consume...))
			}
			for _, a := range []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"} {
				want := slices.Clone(w.read)
				if a == "dynamodb:GetItem" {
					want = append(want, w.items...)
				}
				if a == "dynamodb:BatchGetItem" {
					want = append(want, w.batch...)
				}
				eq(a+" on", ids(on(gs, a)), want)
			}
			for _, a := range []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem"} {
				want := slices.Clone(w.write)
				switch a {
				case "dynamodb:ConditionCheckItem":
					want = w.read // part of the read grant
				case "dynamodb:UpdateItem":
					for _, id := range append(slices.Clone(w.update), w.items...) {
						if !slices.Contains(want, id) {
							want = append(want, id)
						}
					}
				}
				eq(a+" on", ids(on(gs, a)), want)
			}
			var s3 []string
			for _, g := range gs {
				if w.quarantine && g.action == "s3:PutObject" && g.resource == "${"+IDPayloadBucket+".Arn}/"+QuarantinePrefix+"*" {
					continue
				}
				if strings.HasPrefix(g.action, "s3:") && g.action != "s3:ListBucket" {
					if g.resource != "${"+IDPayloadBucket+".Arn}/diffs/*" {
						t.Errorf("%s on %s: want only the payload bucket's diffs/*", g.action, g.resource)
					}
					s3 = append(s3, g.action)
				}
			}
			sort.Strings(s3)
			eq("S3 object actions", s3, w.s3)
			if lb := on(gs, "s3:ListBucket"); len(lb) > 0 && (len(w.s3) == 0 || !slices.Equal(lb, []string{"${" + IDPayloadBucket + ".Arn}"})) {
				t.Errorf("s3:ListBucket on %v", lb)
			}
			eq("secretsmanager:GetSecretValue on", ids(on(gs, "secretsmanager:GetSecretValue")), w.secrets)
			mail := on(gs, "ses:SendEmail")
			if (len(mail) > 0) != w.sendMail {
				t.Errorf("ses:SendEmail on %v (want access: %v)", mail, w.sendMail)
			}
			if w.sendMail {
				want := []string{
					"arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:configuration-set/${" + IDConfigurationSet + "}",
					"arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:identity/critic@reviews.example.org",
					"arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:identity/reviews.example.org",
				}
				eq("ses:SendEmail on", mail, want)
			}
			logs := refID(get(props(s.resource(t, FunctionID(f.Name))), "LoggingConfig", "LogGroup"))
			eq("logs:PutLogEvents on", on(gs, "logs:PutLogEvents"), []string{"${" + logs + ".Arn}"})

			// Nothing on "*", and no resource outside the expected set.
			allowed := map[string]bool{logs: true, IDPayloadBucket: len(w.s3) > 0 || w.quarantine, IDConfigurationSet: w.sendMail}
			for _, l := range [][]string{w.send, w.consume, w.read, w.write, w.update, w.items, w.secrets, w.counters} {
				for _, id := range l {
					allowed[id] = true
				}
			}
			quota := on(gs, "ses:GetAccount")
			if w.sendMail != (len(quota) > 0) || (len(quota) > 0 && !slices.Equal(quota, []string{"*"})) {
				t.Errorf("ses:GetAccount on %v; want it on * exactly where SendEmail is granted (it acts on no resource)", quota)
			}
			for _, g := range gs {
				if g.resource == "*" && g.action == "ses:GetAccount" {
					continue
				}
				if g.resource == "*" {
					t.Errorf("%s granted on *", g.action)
					continue
				}
				for _, id := range refs(g.resource) {
					if !allowed[id] {
						t.Errorf("%s granted on %s: not this function's resource", g.action, g.resource)
					}
				}
			}
		})
	}
}

// The spot checks the issue names, spelled out.
func TestLeastPrivilegeSpotChecks(t *testing.T) {
	s := synth(t)
	notify := s.grants(t, FnNotify)
	for _, g := range notify {
		if strings.HasPrefix(g.action, "sqs:") && slices.Contains(refs(g.resource), QueueID(QFetch)) {
			t.Errorf("notify can %s on the fetch queue", g.action)
		}
	}
	// feedback's transient-bounce resend may send to the notify queue and to
	// no other queue: not the other stages, not any DLQ, not its own queue.
	var feedbackSends []string
	for _, g := range s.grants(t, FnFeedback) {
		if g.action == "sqs:SendMessage" || g.action == "sqs:*" || g.action == "sqs:Send*" {
			feedbackSends = append(feedbackSends, refs(g.resource)...)
		}
	}
	if !slices.Equal(feedbackSends, []string{QueueID(QNotify)}) {
		t.Errorf("feedback can send to %v, want the notify queue only (%s)", feedbackSends, QueueID(QNotify))
	}
	intake := s.grants(t, FnIntake)
	for _, g := range intake {
		if !slices.Contains(refs(g.resource), IDDeliveriesTable) {
			continue
		}
		switch g.action {
		case "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:ConditionCheckItem",
			"dynamodb:DescribeTable", "dynamodb:GetRecords", "dynamodb:GetShardIterator":
			// GET /jobs/{id} reads each recipient's delivery row.
		default:
			t.Errorf("intake can %s on the deliveries table", g.action)
		}
	}
	// Each secret is readable by its own functions only: the webhook secret
	// by intake, the fetch secret by fetch, the critic secret by llm, the
	// unsubscribe key by intake and notify.
	owners := map[string][]string{IDWebhookSecret: {FnIntake}, IDFetchSecret: {FnFetch}, IDCriticSecret: {FnLLM},
		IDUnsubscribeSecret: {FnIntake, FnNotify}}
	for _, fn := range []string{FnIntake, FnFetch, FnLLM, FnNotify, FnFeedback, FnSweeper} {
		for _, g := range s.grants(t, fn) {
			for id, own := range owners {
				if !slices.Contains(own, fn) && slices.Contains(refs(g.resource), id) {
					t.Errorf("%s can %s on %s", fn, g.action, id)
				}
			}
		}
	}
}

// fetch and llm reach the jobs table only through keyed items: every
// statement on it carries a dynamodb:LeadingKeys condition, and each grants
// exactly its actions on its prefixes: GetItem and UpdateItem on their
// job's JOB# and SRC# items; for fetch also GetItem on ROSTER# (who reviews
// a changelist), BatchGetItem on DIR# (the directory's entries) and
// UpdateItem on UNKNOWN# (its list of unknown reviewers); for llm also
// UpdateItem on BUDGET# (the model-run budgets).
// Rules: R-REVIEWERS-4, R-BUDGET-1.
func TestJobItemsOnly_LeadingKeysCondition(t *testing.T) {
	s := synth(t)
	jobItems := "dynamodb:GetItem,dynamodb:UpdateItem on " + JobItemPrefix + "*," + SourceRefPrefix + "*"
	want := map[string][]string{
		FnLLM: {jobItems, "dynamodb:UpdateItem on " + BudgetPrefix + "*"},
		FnFetch: {jobItems, "dynamodb:GetItem on " + RosterPrefix + "*", "dynamodb:BatchGetItem on " + DirectoryPrefix + "*",
			"dynamodb:UpdateItem on " + UnknownPrefix + "*"},
	}
	for fn, wantStatements := range want {
		role := refID(props(s.resource(t, FunctionID(fn)))["Role"])
		var got []string
		for _, p := range s.resources("AWS::IAM::Policy") {
			if !slices.Contains(strs(props(p)["Roles"]), "${"+role+"}") {
				continue
			}
			for _, st := range get(props(p), "PolicyDocument", "Statement").([]any) {
				if !strings.Contains(render(get(st, "Resource")), IDJobsTable) {
					continue
				}
				keys := strs(get(st, "Condition", "ForAllValues:StringLike", "dynamodb:LeadingKeys"))
				actions := strs(get(st, "Action"))
				sort.Strings(actions)
				got = append(got, strings.Join(actions, ",")+" on "+strings.Join(keys, ","))
			}
		}
		sort.Strings(got)
		sort.Strings(wantStatements)
		if !slices.Equal(got, wantStatements) {
			t.Errorf("%s: jobs table statements %q, want %q", fn, got, wantStatements)
		}
	}
}
