package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// Mutation is one deliberate bug in the protocol's code: Old, found
// exactly once in File, replaced by New.
type Mutation struct {
	ID string
	// File is the mutated file, relative to the module root.
	File     string
	Old, New string
	// What the mutation breaks, in words.
	What string
	// Scenarios are the explorer's scenarios tried first (speed only:
	// the others follow).
	Scenarios []string
	// Checks, when set, are the checks run against it, in this order (by
	// default, every check whose package builds the file, in the order
	// of checks()).
	Checks []string
	// Equivalent, when set, says why no check can observe the mutation:
	// it is not expected to be caught, and is left out of the kill rate.
	Equivalent string
}

// Apply returns File's text with the mutation applied, or an error
// naming the mutation when Old is not found exactly once (the code moved
// on: the list must follow it).
func (m Mutation) Apply(root string) ([]byte, error) {
	src, err := os.ReadFile(filepath.Join(root, m.File))
	if err != nil {
		return nil, fmt.Errorf("mutation %s: %w", m.ID, err)
	}
	if n := bytes.Count(src, []byte(m.Old)); n != 1 {
		return nil, fmt.Errorf("mutation %s: its target text is found %d times in %s, want exactly once: update the mutation to the code", m.ID, n, m.File)
	}
	if m.Old == m.New {
		return nil, fmt.Errorf("mutation %s changes nothing", m.ID)
	}
	return bytes.Replace(src, []byte(m.Old), []byte(m.New), 1), nil
}

// dynamo is the one check that runs the DynamoDB store.
var dynamo = []string{"conformance/dynamodb"}

// memFirst is the order for the in-memory store's own guards: its
// conformance suite first (seconds), the explorer (minutes) only if the
// suite misses it.
var memFirst = []string{"conformance/memstore", "explore"}

const (
	memstore  = "internal/store/memstore/deliveries.go"
	decide    = "internal/delivery/decide.go"
	successor = "internal/delivery/successor.go"
	notifySnd = "internal/pipeline/notify_send.go"
	notifyEv  = "internal/pipeline/notify_evidence.go"
	notifyGo  = "internal/pipeline/notify.go"
	quiet     = "internal/pipeline/notify_quiet.go"
	sweeperGo = "internal/sweep/sweeper.go"
	runnerGo  = "internal/stage/runner.go"
	stageDl   = "internal/stage/deadline.go"
	headsGo   = "internal/store/heads.go"
)

// Mutations is the fixed list (docs/chaos.md reports what catches each).
// Guards of the stores' conditional writes (in memory and on DynamoDB),
// the evidence rule (CaughtUp, Settle), the claim and its lease, the
// quiet rules, the sweeper's picks, the runner's partial batch response
// and deadline handling, the feedback function and the drain check.
func Mutations() []Mutation {
	return []Mutation{
		// The in-memory deliveries (memstore): what the explorer runs on.
		// The explorer first: it must catch this one (no scenario did
		// before requeue-race).
		{ID: "memstore-requeue-live-lease", File: memstore, Scenarios: []string{"requeue-race", "overlapping-sweeps"},
			What: "Requeue lands on a row under a live lease (another notifier's fresh claim)",
			Old:  "return r.Status == delivery.StatusSending && r.LeaseUntil.Before(now) && neverSent(r)",
			New:  "return r.Status == delivery.StatusSending && neverSent(r)"},
		{ID: "memstore-claim-sent-row", File: memstore, Checks: memFirst,
			What: "Claim takes a row that carries a sign of a send (a notification id, provider evidence)",
			Old:  "return r.Status.Claimable() && neverSent(r)\n\t}, func(r *delivery.Row) {\n\t\tr.Status, r.Attempts",
			New:  "return r.Status.Claimable()\n\t}, func(r *delivery.Row) {\n\t\tr.Status, r.Attempts"},
		{ID: "memstore-claim-any-status", File: memstore, Checks: memFirst, Scenarios: []string{"two-notifiers", "requeue-race"},
			What: "Claim takes a row in any status, one already being sent among them",
			Old:  "return r.Status.Claimable() && neverSent(r)\n\t}, func(r *delivery.Row) {\n\t\tr.Status, r.Attempts",
			New:  "return neverSent(r)\n\t}, func(r *delivery.Row) {\n\t\tr.Status, r.Attempts"},
		{ID: "memstore-marksent-any-claim", File: memstore, Checks: memFirst,
			What: "MarkSent writes without holding the claim",
			Old:  "row, err := s.update(id, sendingUnder(token), func(r *delivery.Row) {\n\t\tr.Status, r.NotificationID, r.NotifiedAt",
			New:  "row, err := s.update(id, func(delivery.Row) bool { return true }, func(r *delivery.Row) {\n\t\tr.Status, r.NotificationID, r.NotifiedAt"},
		{ID: "memstore-release-any-claim", File: memstore, Checks: memFirst,
			What: "Release writes without holding the claim",
			Old:  "row, err := s.update(id, sendingUnder(token), func(r *delivery.Row) {\n\t\tr.Status, r.LastErrorClass, r.UpdatedAt, r.LeaseUntil",
			New:  "row, err := s.update(id, func(delivery.Row) bool { return true }, func(r *delivery.Row) {\n\t\tr.Status, r.LastErrorClass, r.UpdatedAt, r.LeaseUntil"},
		{ID: "memstore-event-other-message", File: memstore, Checks: memFirst, Scenarios: []string{"events-twice", "send-faults"},
			What: "an event naming another message of the row is taken as the row's own evidence",
			Old:  "if (r.NotificationID != \"\" && r.NotificationID != e.MessageID) || (r.ProviderMessageID != \"\" && r.ProviderMessageID != e.MessageID) {",
			New:  "if false {"},
		{ID: "memstore-backfill-twice", File: memstore, Checks: memFirst,
			What: "Backfill overwrites a row already marked sent",
			Old:  "return s.update(id, func(r delivery.Row) bool { return r.NotifiedAt.IsZero() }, func(r *delivery.Row) {",
			New:  "return s.update(id, func(r delivery.Row) bool { return true }, func(r *delivery.Row) {"},
		{ID: "memstore-skip-claimed-row", File: memstore, Checks: memFirst, Scenarios: []string{"superseded"},
			What: "Skip settles quietly a row already claimed or sent",
			Old:  "return r.Status.Claimable() && neverSent(r)\n\t}, func(r *delivery.Row) { r.Status, r.SkipReason",
			New:  "return true\n\t}, func(r *delivery.Row) { r.Status, r.SkipReason"},
		{ID: "memstore-bounce-resends-uncapped", File: memstore, Checks: memFirst, Scenarios: []string{"transient-bounce"},
			What: "a transiently bounced row is resent past the cap",
			Old:  "return (wasSent || lostAnswer) && r.BounceResends < max",
			New:  "return wasSent || lostAnswer"},
		{ID: "memstore-reconcile-confirmed-row", File: memstore, Checks: memFirst,
			What: "MarkReconciling takes a row whose Send event was recorded",
			Old:  "return r.Status == delivery.StatusSent && r.SendEventAt.IsZero() && r.DeliveredAt.IsZero() && r.Resolution != delivery.ResolvedSent",
			New:  "return r.Status == delivery.StatusSent && r.DeliveredAt.IsZero() && r.Resolution != delivery.ResolvedSent"},
		{ID: "memstore-pin-base-overwritten", File: "internal/store/memstore/pin.go", Checks: memFirst,
			What: "PinBase replaces the base a version's files were read at (a retry reads other settings, R-SOURCE-5)",
			Old:  "if ref.BaseSHA == \"\" {",
			New:  "if true {"},

		// The DynamoDB deliveries: the conformance suite holds it to the same
		// contract. The explorer runs the in-memory store, so it is not
		// run against these (its package imports the store's types only).
		{ID: "dynamodb-requeue-live-lease", File: "internal/store/dynamo/deliveries_held.go", Checks: dynamo,
			What: "Requeue lands on a row under a live lease",
			Old:  "cond := statusIs(delivery.StatusSending).And(leaseExpired(now)).And(neverSent())",
			New:  "cond := statusIs(delivery.StatusSending).And(neverSent())"},
		{ID: "dynamodb-claim-sent-row", File: "internal/store/dynamo/deliveries_send.go", Checks: dynamo,
			What: "Claim takes a row that carries a sign of a send",
			Old:  "cond := claimableStatus().And(neverSent())",
			New:  "cond := claimableStatus()"},
		{ID: "dynamodb-marksent-any-claim", File: "internal/store/dynamo/deliveries_send.go", Checks: dynamo,
			What: "MarkSent writes without holding the claim",
			Old:  "row, err := s.updateReturn(ctx, id, upd, claimHeld(token))\n\treturn s.ours(ctx, id, row, err, func(r delivery.Row) bool { return r.NotificationID == notificationID })",
			New:  "row, err := s.updateReturn(ctx, id, upd, rowExists())\n\treturn s.ours(ctx, id, row, err, func(r delivery.Row) bool { return r.NotificationID == notificationID })"},
		{ID: "dynamodb-backfill-twice", File: "internal/store/dynamo/deliveries_held.go", Checks: dynamo,
			What: "Backfill overwrites a row already marked sent",
			Old:  "cond := notSet(attrNotifiedAt).And(rowExists())",
			New:  "cond := rowExists()"},
		{ID: "dynamodb-skip-claimed-row", File: "internal/store/dynamo/deliveries_send.go", Checks: dynamo,
			What: "Skip settles quietly a row already claimed or sent",
			Old:  "return s.updateReturn(ctx, id, upd, claimableStatus().And(neverSent()))",
			New:  "return s.updateReturn(ctx, id, upd, rowExists())"},
		{ID: "dynamodb-reconcile-confirmed-row", File: "internal/store/dynamo/deliveries_verdicts.go", Checks: dynamo,
			What: "MarkReconciling takes a row whose Send event was recorded",
			Old:  "cond := statusIs(delivery.StatusSent).\n\t\tAnd(notSet(attrEvidenceSendAt)).\n\t\tAnd(notSet(attrEvidenceDeliveryAt))",
			New:  "cond := statusIs(delivery.StatusSent).\n\t\tAnd(notSet(attrEvidenceDeliveryAt))"},
		{ID: "dynamodb-event-other-message", File: "internal/store/dynamo/deliveries_events.go", Checks: dynamo,
			What: "an event naming another message of the row is taken as the row's own evidence",
			Old:  "\t\tAnd(notSetOrEqual(attrNotificationID, msg)).\n\t\tAnd(notSetOrEqual(attrProviderMessageID, msg))",
			New:  "\t\tAnd(rowExists())"},
		{ID: "dynamodb-pin-base-overwritten", File: "internal/store/dynamo/sourceref_pin.go", Checks: dynamo,
			What: "PinBase replaces the base a version's files were read at (a retry reads other settings, R-SOURCE-5)",
			Old:  `ConditionExpression:       aws.String("attribute_exists(pk) AND attribute_not_exists(#b)"),`,
			New:  `ConditionExpression:       aws.String("attribute_exists(pk)"),`},
		{ID: "dynamodb-evidence-backwards", File: "internal/store/dynamo/evidence.go", Checks: dynamo,
			What: "the evidence path's times move backwards as well as forwards",
			Old:  "cond := expression.AttributeNotExists(expression.Name(attr)).\n\t\tOr(expression.Name(attr).LessThan(expression.Value(ts(at))))",
			New:  "cond := expression.AttributeNotExists(expression.Name(attr)).\n\t\tOr(expression.Name(attr).LessThan(expression.Value(ts(at)))).Or(expression.AttributeExists(expression.Name(attr)))"},

		// The code hosts' head order (R-SOURCE-6): the decision both
		// drivers share, and each driver's guards. Intake and the explorer
		// run generic webhooks only, so the conformance suites are the
		// checks (storetest.Heads, Create_PlacedVersionBelowTheHead).
		{ID: "heads-late-push-versioned", File: headsGo, Checks: []string{"conformance/memstore", "conformance/dynamodb"},
			What: "a head a versioned head named as its before gets the next version when its own webhook comes late",
			Old:  "\tcase self != nil:\n\t\t// Named as the before of a versioned head: behind it.\n\t\treturn Draw{Stale: true, Current: c.Last}",
			New:  "\tcase self != nil && self.Version > 0:\n\t\t// Named as the before of a versioned head: behind it.\n\t\treturn Draw{Stale: true, Current: c.Last}"},
		{ID: "heads-before-not-marked", File: headsGo, Checks: []string{"conformance/memstore", "conformance/dynamodb"},
			What: "the unknown before a head names is not recorded behind it",
			Old:  "return Draw{Order: HeadPending, After: c.Head, Mark: unknownBefore(ev, before)}",
			New:  "return Draw{Order: HeadPending, After: c.Head}"},
		{ID: "memstore-settle-head-twice", File: "internal/store/memstore/heads.go", Checks: []string{"conformance/memstore"},
			What: "SettleHead overwrites a verdict already recorded",
			Old:  "if r.Order == store.HeadPending {",
			New:  "if r.Order != \"\" {"},
		{ID: "memstore-placed-below-head-refused", File: "internal/store/memstore/jobs.go", Checks: []string{"conformance/memstore"},
			What: "a version placed in the code host's order is refused as stale below the changelist's head",
			Old:  "case headExists && h.version >= j.ReviewVersion && !req.Placed:",
			New:  "case headExists && h.version >= j.ReviewVersion:"},
		{ID: "dynamodb-place-head-unconditional", File: "internal/store/dynamo/versions.go", Checks: dynamo,
			What: "a version is drawn whatever the counter holds now: two heads placed at once draw one number",
			Old:  "cond = \"last_version = :last\"",
			New:  "cond = \"last_version = :last OR last_version <> :last\""},
		{ID: "dynamodb-place-head-over-a-mark", File: "internal/store/dynamo/versions.go", Checks: dynamo,
			What: "a head read as unknown is drawn over a mark another placement wrote since: a late head gets a version",
			Old:  "headCond := \"attribute_not_exists(pk)\"",
			New:  "headCond := \"attribute_not_exists(review_version)\""},
		{ID: "dynamodb-settle-head-twice", File: "internal/store/dynamo/versions.go", Checks: dynamo,
			What: "SettleHead overwrites a verdict already recorded",
			Old:  "ConditionExpression:                 aws.String(\"#o = :pending\"),",
			New:  "ConditionExpression:                 aws.String(\"#o = :pending OR #o <> :pending\"),"},
		{ID: "dynamodb-placed-below-head-refused", File: "internal/store/dynamo/jobs.go", Checks: dynamo,
			What: "a version placed in the code host's order is refused as stale below the changelist's head",
			Old:  "if !conflict && res.Outcome == store.Stale && req.Placed {",
			New:  "if !conflict && res.Outcome == store.Stale && req.Placed && false {"},

		// The evidence rule and the claim's lease (internal/delivery).
		{ID: "caughtup-no-bound", File: decide, Scenarios: []string{"send-faults", "lost-answer-two-reviews"},
			What: "CaughtUp drops the publish bound: drained past the send itself counts",
			Old:  "e.Drained.After(t.Add(e.Bound))",
			New:  "e.Drained.After(t)"},
		{ID: "settle-resends-despite-evidence", File: decide, Scenarios: []string{"send-faults"},
			What: "Settle ignores provider evidence on a row whose answer was lost: it waits or resends instead of backfilling",
			Old:  "if r.HasEvidence() || r.NotificationID != \"\" {",
			New:  "if r.NotificationID != \"\" {"},
		{ID: "summarize-refused-complete", File: decide, Scenarios: []string{"send-faults"},
			What: "a job counts as complete with a row refused for good (failed_permanent), not as needing a person",
			Old:  "case r.Status == StatusFailedPermanent || r.Status == StatusReconciling:\n\t\t\tblocked = true",
			New:  "case r.Status == StatusFailedPermanent || r.Status == StatusReconciling:\n\t\t\tblocked = false"},
		{ID: "notify-lost-answer-released", File: notifySnd, Scenarios: []string{"send-faults"},
			What: "a send whose answer was lost (connection reset) is released as not sent",
			Old:  "case retry.NetworkTimeout, retry.NetworkError, retry.Upstream5xx, retry.Unknown:",
			New:  "case retry.NetworkTimeout, retry.Upstream5xx, retry.Unknown:"},
		{ID: "notify-sends-after-lost-claim", File: notifySnd, Scenarios: []string{"two-notifiers", "requeue-race"},
			What: "a notifier whose claim lost to another goes on to send",
			Old:  "\tif lost {\n\t\treturn claimed, true, nil\n\t}\n\tmsgID, sendErr",
			New:  "\tif lost && false {\n\t\treturn claimed, true, nil\n\t}\n\tmsgID, sendErr"},
		{ID: "notify-reconcile-resends-at-once", File: notifyEv, Scenarios: []string{"send-faults"},
			What: "reconcile resends a row whose send may have happened without asking the evidence path",
			Old:  "\tswitch delivery.Settle(r, ev) {\n\tcase delivery.Backfill:",
			New:  "\tswitch delivery.Resend {\n\tcase delivery.Backfill:"},
		{ID: "notify-finalize-ignores-rows", File: "internal/pipeline/notify_finalize.go",
			What: "the job is made succeeded whatever its rows say",
			Old:  "\tswitch delivery.Summarize(rows) {",
			New:  "\tswitch delivery.Complete {"},

		// The quiet rules (R-QUIET-1..3).
		{ID: "quiet-supersede-by-older", File: quiet, Scenarios: []string{"superseded"},
			What: "a version looks for versions that supersede it when it is itself the head",
			Equivalent: "an early exit only: supersede's loop looks at versions above the row's own, so with the head " +
				"not above it there is nothing to judge and the row is mailed either way; the mutant spends no call",
			Old: "(err == nil && head <= j.ReviewVersion)",
			New: "(err == nil && head < j.ReviewVersion)"},
		{ID: "quiet-sending-successor-reached", File: successor, Scenarios: []string{"newer-refused"},
			What: "a newer version whose row is still sending counts as having reached the recipient (it may yet fail for good)",
			Equivalent: "masked by the second guard since R-QUIET-4: the older row's settlement is one transaction holding the row it " +
				"stands on to carrying it (store SettleQuiet, delivery.Row.Carries: sent, or settled on content the reader had), so a " +
				"row in sending is refused there and notify decides again once it settles; the mutant spends retries, never a wrong " +
				"settlement. The judge's rule alone is shown by the explorer's variant sending-counts-as-reached (with the settlement " +
				"as it was) and TestJudge_NewerVersionForARecipient; the guard by memstore-settle-quiet-on-unreached",
			Old: "\tcase r.Status == StatusSending:\n\t\treturn Undecided",
			New: "\tcase r.Status == StatusSending:\n\t\treturn Reached"},
		{ID: "quiet-dead-lettered-successor-waits", File: successor, Scenarios: []string{"newer-dead-lettered"},
			What: "a dead-lettered newer version is waited for, as if it could still mail the recipient",
			Old:  "\t\tif newer.Status == job.StatusDeadLettered {\n\t\t\treturn Unreachable",
			New:  "\t\tif newer.Status == job.StatusDeadLettered {\n\t\t\treturn Undecided"},
		{ID: "quiet-settles-claimed-rows", File: quiet, Scenarios: []string{"superseded"},
			What: "the quiet rules try to settle rows already claimed or sent",
			Equivalent: "the filter is the store's SettleQuiet condition (claimable, never sent) read ahead: a row it would have left out " +
				"is refused by SettleQuiet and read again, so the mutant only spends a write",
			Old: "\tfor i, r := range rows {\n\t\tif !r.Unsent() {\n\t\t\tcontinue\n\t\t}\n\t\tstatus, reason, on := decide(r)",
			New: "\tfor i, r := range rows {\n\t\tstatus, reason, on := decide(r)"},

		// Reached means reached (R-QUIET-4): a send SES undid after its
		// Send event spares no one an email.
		{ID: "reached-undone-counts", File: "internal/delivery/quiet.go", Scenarios: []string{"newer-rejected"},
			What: "a row SES rejected or bounced after its Send counts as having reached its reader",
			Old:  "\tif r.Undone() {\n\t\treturn false\n\t}",
			New:  "\tif false && r.Undone() {\n\t\treturn false\n\t}"},
		{ID: "feedback-reject-revives-nothing", File: "internal/sesevent/handler.go", Scenarios: []string{"newer-rejected"},
			What: "a Reject after the Send leaves the rows settled quietly on the rejected one standing",
			Old:  "\tif err := h.revive(ctx, row); err != nil {\n\t\treturn err\n\t}\n\tobs.Metric(ctx, h.Log, map[string]string{\"Reason\": \"reject\"}",
			New:  "\tobs.Metric(ctx, h.Log, map[string]string{\"Reason\": \"reject\"}"},
		{ID: "memstore-settle-quiet-on-unreached", File: memstore, Checks: memFirst, Scenarios: []string{"newer-rejected"},
			What: "a quiet settlement stands on a row whatever the row says: one rejected since it was read among them",
			Old:  "\tif !ok || !o.Carries(status) {",
			New:  "\tif !ok {"},
		{ID: "memstore-revive-any-quiet-row", File: memstore, Checks: memFirst, Scenarios: []string{"newer-rejected"},
			What: "Revive takes a row settled quietly on another row than the undone one",
			Old:  "return r.Status.Quiet() && r.StandsOn == on",
			New:  "return r.Status.Quiet()"},
		{ID: "dynamodb-settle-quiet-on-undone", File: "internal/store/dynamo/deliveries_quiet.go", Checks: dynamo,
			What: "a quiet settlement stands on a row SES rejected or bounced after its Send",
			Old:  "return rowExists().And(notSet(attrEvidenceRejectAt)).And(notSet(attrEvidenceBounceAt)).And(sentOrHad)",
			New:  "return rowExists().And(sentOrHad)"},
		{ID: "dynamodb-revive-any-quiet-row", File: "internal/store/dynamo/deliveries_quiet.go", Checks: dynamo,
			What: "Revive takes a row settled quietly on another row than the undone one",
			Old:  "cond := statusIn(delivery.QuietStatuses()).And(expression.Name(attrStandsOn).Equal(expression.Value(on)))",
			New:  "cond := statusIn(delivery.QuietStatuses())"},

		// The fixes the explorer cannot see: a reply's headers
		// (R-REPLY-2, R-REPLY-8), a dismissal's place (R-VOTE-3), the
		// trusted commit (R-REPO-6, R-REPO-7), a code host's order at
		// fetch and in a push's webhook (R-SOURCE-6). Each is run against
		// the focused tests of its package, the replies' end to end too.
		{ID: "replies-first-from-only", File: "internal/inbound/verdict.go", Checks: []string{"unit/inbound", "e2e/replies"},
			What: "a reply with two From fields is judged by its first: acted on from a From SES's verdict may not be about",
			Old:  "\tcase len(froms) > 1:\n\t\treturn \"\", DropAmbiguousFrom",
			New:  "\tcase false:\n\t\treturn \"\", DropAmbiguousFrom"},
		{ID: "replies-sender-ignored", File: "internal/inbound/verdict.go", Checks: []string{"unit/inbound"},
			What: "a reply whose Sender is not its From is acted on",
			Old:  "\tfor _, s := range senders {",
			New:  "\tfor _, s := range senders[:0] {"},
		{ID: "replies-judged-from-ignored", File: "internal/inbound/verdict.go", Checks: []string{"unit/inbound"},
			What: "a reply is acted on whatever From SES's verdicts were about (the notification's commonHeaders.from)",
			Old:  "\tjudged := n.Mail.CommonHeaders.From",
			New:  "\tjudged := []string{addr}"},
		{ID: "replies-keyed-by-ses-id", File: "internal/inbound/handler.go", Checks: []string{"unit/inbound", "e2e/replies"},
			What: "a reply is keyed by SES's message id, not its (sender, Message-ID): received twice, acted on and confirmed twice",
			Old:  "\tif id := ownMessageID(hdr); id != \"\" {\n\t\treturn delivery.ReplyIDOf(sender, id), true",
			New:  "\tif id := ownMessageID(hdr); id != \"\" && false {\n\t\treturn delivery.ReplyIDOf(sender, id), true"},
		{ID: "anchor-dismissal-without-place", File: "internal/critic/identity.go", Checks: []string{"unit/critic", "unit/dismissal"},
			What: "a dismissal is keyed by file, rule and the line's text only: the same text elsewhere is hidden too",
			Old:  "f.Anchor + \"\\x00\" + f.Place))",
			New:  "f.Anchor))"},
		{ID: "anchor-placed-key-without-place", File: "internal/critic/compare.go", Checks: []string{"unit/critic", "unit/dismissal"},
			What: "findings are paired across versions without their place: a copy of a flagged line is taken for the old finding",
			Old:  "return findingKey{file: f.File, anchor: f.Anchor, rule: f.Rule, place: f.Place}, true",
			New:  "return findingKey{file: f.File, anchor: f.Anchor, rule: f.Rule}, true"},
		{ID: "trusted-gerrit-settings-at-parent", File: "internal/source/gerrit_file.go", Checks: []string{"unit/source"},
			What: "Gerrit settings and markers are read at the patch set's parent (?parent=1): in a stack, the author's own unmerged change",
			Old:  "\tu := g.root() + \"/a/projects/\" + url.PathEscape(ref.Repo) + \"/commits/\" + url.PathEscape(ref.BaseSHA) +\n\t\t\"/files/\" + url.PathEscape(path) + \"/content\"",
			New:  "\tchange, _ := g.change(ref)\n\tu := change + \"/revisions/\" + gerritRevision(ref) + \"/files/\" + url.PathEscape(path) + \"/content?parent=1\""},
		{ID: "trusted-gerrit-hashtags-skip", File: "internal/source/labels.go", Checks: []string{"unit/source"},
			What: "a Gerrit hashtag, which the change's owner may set, counts as a skip label",
			Old:  "func (g *Gerrit) LabelsBeyondAuthor(context.Context, Ref, string, []string) (LabelVerdict, error) {\n\treturn LabelVerdict{Why: whyGerritHashtags}, nil",
			New:  "func (g *Gerrit) LabelsBeyondAuthor(_ context.Context, _ Ref, _ string, labels []string) (LabelVerdict, error) {\n\treturn LabelVerdict{Beyond: labels}, nil"},
		{ID: "versions-fetch-behind-ignored", File: "internal/pipeline/fetch_order.go", Checks: []string{"unit/fetch-order"},
			What: "a pending head the code host places behind (compare: behind, identical) is reviewed and mailed as the newest",
			Old:  "\t\tif st == source.Behind || st == source.Identical {",
			New:  "\t\tif false && (st == source.Behind || st == source.Identical) {"},
		{ID: "versions-before-any-action", File: "internal/webhook/github.go", Checks: []string{"unit/webhook"},
			What: "a before is read from any pull_request action, not only synchronize",
			Old:  "if action != \"synchronize\" || h.Before == nil",
			New:  "if h.Before == nil"},
		{ID: "versions-before-after-mismatch", File: "internal/webhook/github.go", Checks: []string{"unit/webhook"},
			What: "a synchronize's before counts though its after is not the pull request's head",
			Old:  "h.After == nil || !strings.EqualFold(strings.TrimSpace(*h.After), head) {",
			New:  "h.After == nil {"},

		// What the owed check sees (internal/owed, R-OWED-1): a late push
		// versioned through intake, an older version mailed to an address
		// bounced for good.
		{ID: "memstore-late-push-versioned", File: "internal/store/memstore/jobs.go", Checks: []string{"explore"}, Scenarios: []string{"pushes-out-of-order"},
			What: "a version below the changelist's head is created when its webhook comes late: the stale version is mailed",
			Old:  "case headExists && h.version >= j.ReviewVersion && !req.Placed:",
			New:  "case headExists && h.version >= j.ReviewVersion && !req.Placed && false:"},
		{ID: "quiet-bounced-successor-mails-older", File: quiet, Scenarios: []string{"newer-bounced"},
			What: "an older version is mailed when the newer one bounced for good before the address is suppressed",
			Old:  "\t\tcase gone[r.ID] > 0:",
			New:  "\t\tcase false && gone[r.ID] > 0:"},

		// The sweeper's picks.
		{ID: "sweeper-reconciles-behind-path", File: sweeperGo,
			What: "the sweeper takes a sent row without an event for an ordering violation while the evidence path is behind it",
			Old:  "\tif !ev.CaughtUp(r.NotifiedAt) {\n\t\treturn nil\n\t}",
			New:  "\tif false {\n\t\treturn nil\n\t}"},
		{ID: "sweeper-leaves-stuck-send", File: sweeperGo, Scenarios: []string{"overlapping-sweeps"},
			What: "the sweeper finds a row stuck in sending but never hands it to notify",
			Old:  "\t\t\treturn s.Queue.Enqueue(ctx, m)",
			New:  "\t\t\treturn nil"},
		{ID: "sweeper-leaves-stuck-job", File: sweeperGo, Scenarios: []string{"lost-message-sweeps"},
			What: "the sweeper finds a stuck job but never enqueues it again",
			Old:  "\t\t\treturn s.Queue.Enqueue(ctx, job.Message{JobID: j.ID, Stage: j.Stage})",
			New:  "\t\t\treturn nil"},

		// The runner: partial batch response and deadline handling.
		{ID: "runner-failure-not-reported", File: runnerGo, Scenarios: []string{"deadline-batches", "two-notifiers"},
			What: "a record that failed is not reported as a batch item failure, so it is deleted",
			Old:  "\t\tif !r.record(work, after, rec) {\n\t\t\tresp.BatchItemFailures",
			New:  "\t\tif !r.record(work, after, rec) && false {\n\t\t\tresp.BatchItemFailures"},
		{ID: "runner-handback-skips-one", File: runnerGo, Scenarios: []string{"deadline-batches"},
			What: "the first message there is no time for is neither started nor handed back, so it is deleted",
			Old:  "for _, id := range r.handBack(after, ev.Records[i:]) {",
			New:  "for _, id := range r.handBack(after, ev.Records[i+1:]) {"},
		{ID: "runner-ignores-deadline", File: runnerGo, Scenarios: []string{"deadline-batches"},
			What: "every message of a batch is started, whatever is left of the invocation",
			Old:  "if i > 0 && !plan.Allows() {",
			New:  "if i > 0 && !plan.Allows() && false {"},
		{ID: "runner-unstarted-copy-dropped", File: stageDl, Scenarios: []string{"deadline-batches"},
			What: "a message not started is taken as handed back without its copy being sent",
			Old:  "\tif berr == nil {\n\t\tberr = r.Queue.Requeue(ctx, r.QueueURL, body, 0)\n\t}",
			New:  "\tif berr == nil && false {\n\t\tberr = r.Queue.Requeue(ctx, r.QueueURL, body, 0)\n\t}"},

		// The feedback function and the drain check.
		{ID: "feedback-failure-not-reported", File: "internal/sesevent/handler.go", Scenarios: []string{"store-faults", "kills-and-redrive"},
			What: "an event that could not be recorded is not reported as a batch item failure, so it is deleted",
			Old:  "\t\t\th.Log.WarnContext(ctx, \"feedback event not recorded\", \"message_id\", rec.MessageId, \"error\", err)\n\t\t\tfail(rec.MessageId)",
			New:  "\t\t\th.Log.WarnContext(ctx, \"feedback event not recorded\", \"message_id\", rec.MessageId, \"error\", err)"},
		{ID: "drain-ignores-in-flight", File: "internal/drain/drain.go", Scenarios: []string{"send-faults", "lost-answer-two-reviews"},
			What: "the drain check counts a queue empty while a message is in flight",
			Old:  "return c.Visible == 0 && c.InFlight == 0 && c.Delayed == 0",
			New:  "return c.Visible == 0 && c.Delayed == 0"},
	}
}
