package chaos

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// KindRow is one line of the table: a fault kind, how often it was
// injected, and what became of the jobs it hit (a job hit by several kinds
// counts in each of their rows).
type KindRow struct {
	Kind         Kind
	Injected     int // calls failed (or slowed) with this kind
	Jobs         int // jobs with at least one such call made on their behalf
	Recovered    int // of those, every recipient emailed once, job succeeded
	DeadLettered int // of those, dead-lettered with a complete envelope
	Duplicates   int // extra emails among those jobs (must be 0)
	Lost         int // accepted, neither delivered nor dead-lettered (must be 0)
	Stuck        int // not terminal after the drain (must be 0)
}

// Report is a campaign's outcome.
type Report struct {
	Seed        uint64
	Run         string
	Jobs        int
	Rate        float64
	Concurrency int
	Duration    time.Duration
	Restarts    int

	intake       intakeStats
	IntakeErrors []string

	Accepted, NotAccepted                int
	Delivered, DeadLettered, Lost, Stuck int
	NeedsIntervention                    int
	Poisoned, PoisonNotDeadLettered      int // reviews with a malformed diff, and those not dead-lettered
	DeadLetteredHealthy                  int // good reviews that still ended dead-lettered (faults exhausted a budget)
	Unhit                                int // accepted jobs no fault touched
	Emails, Duplicates                   int
	// Daily digests (digest.go): readers on daily delivery, the digest
	// emails sent, and the daily readers' versions they showed (counted
	// in Emails and Duplicates as every (changelist, recipient,
	// version)).
	DailyReaders, Digests, DigestEntries int
	// DigestsUnderFaults are the digest emails SES accepted before the
	// faults stopped (faultsOff).
	DigestsUnderFaults               int
	faultsOff                        time.Time
	Stray, Misaddressed              int
	DLQMessages, RawDLQ, FeedbackDLQ int
	DeliveredWithDLQ                 int // succeeded, yet an earlier attempt left a dead letter
	LogLines                         int64
	LogLeaks                         []string // secrets or addresses found in log lines
	DLQLeaks                         []string // ... and in dead letters
	addrCount                        int

	// The platform kinds' figures (platform.go): invocations killed at
	// their timeout per function (fetch, llm, notify, feedback); feedback
	// messages held late, of them Send events of sends whose answer was
	// lost; messages doomed to the feedback DLQ, the move tasks that
	// redrove it and the messages they moved; validation notices.
	Killed                            map[string]int
	HeldLate, HeldLostSends           int
	Doomed, Redrives, RedriveFailures int
	Redriven                          int64
	Notices                           int
	FeedbackLeft                      int // feedback messages never processed (main queue and DLQ) at the end
	// Replies (replies.go): sent, delivered twice, failed to send;
	// confirmations as wanted, lost and duplicated; votes recorded and
	// lost; reply messages redriven from the DLQ, and left unprocessed.
	Replies, RepliesDoubled, ReplyErrors                     int
	Confirmations, ConfirmationsLost, ConfirmationDuplicates int
	Votes, VotesLost                                         int
	RepliesRedriven, ReplyLeft                               int
	// The signed webhook part (hooks.go).
	hooks hookStats
	// The versions part (versions.go): changes with two versions pushed
	// in order, late or at once; versions answered stale; changes whose
	// version 2 SES rejected or bounced after the Send; the versions
	// owed (internal/owed) and the mails that reached a reader; owed and
	// not delivered (lost), delivered and not owed (wrong). Replies
	// received twice over SMTP and forged ones (replies.go).
	VersionChanges, VersionsStale, VersionsUndone int
	VersionsEnded                                 int // version jobs that ended without mailing (dead-lettered, held)
	VersionsOwed, VersionsMailed                  int
	OwedLost, OwedWrong                           int
	// The code host's part (hostversions.go): pull requests pushed
	// through the GitHub stand-in, their heads, and those answered
	// stale.
	HostPulls, HostHeads, HostStale int
	HostSkipped                     int // versions the fetch stage placed behind a newer one's
	// The status on the change (codehost.go): versions whose head shows
	// a finished status (or message), lost (none, or left pending),
	// posted twice; answers the stand-ins dropped after the work.
	CodeHostStatuses, CodeHostLost, CodeHostDuplicates, CodeHostLostAnswers int
	// The stacked Gerrit change (gerritstack.go), and the mails of it
	// that reached its two reviewers.
	GerritStacked, GerritMailed               int
	RepliesResent, RepliesForged, ForgedActed int
	StagesBusy                                int // stage messages still queued or in flight when the drain deadline passed
	// DrainTimedOut says what was still moving when the drain deadline
	// passed; empty when the stack drained. Every count after a drain that
	// timed out is of a stack still at work, so it is a failure of its
	// own, named first: a slow machine shows as that, not as jobs "lost".
	DrainTimedOut string

	kinds map[Kind]*KindRow
	ByOp  map[Kind]map[string]int
	// Problems lists each failed invariant, redacted.
	Problems []string
}

func (r *Report) count(outcome string, n int) {
	switch outcome {
	case "delivered":
		r.Delivered += n
	case "dead_lettered":
		r.DeadLettered += n
	case "lost":
		r.Lost += n
	case "stuck":
		r.Stuck += n
	}
}

// Rows returns the table rows in kind order.
func (r *Report) Rows() []KindRow {
	var out []KindRow
	for _, k := range allKinds() {
		if row := r.kinds[k]; row != nil {
			out = append(out, *row)
		}
	}
	return out
}

// Failures lists the invariants the campaign broke; empty means it passed.
func (r *Report) Failures() []string {
	var f []string
	if r.DrainTimedOut != "" {
		f = append(f, "the stack did not drain: "+r.DrainTimedOut)
	}
	if r.Duplicates > 0 {
		f = append(f, fmt.Sprintf("%d duplicate emails", r.Duplicates))
	}
	if r.Lost > 0 {
		f = append(f, fmt.Sprintf("%d jobs lost", r.Lost))
	}
	if r.Stuck > 0 {
		f = append(f, fmt.Sprintf("%d jobs stuck", r.Stuck))
	}
	if r.PoisonNotDeadLettered > 0 {
		f = append(f, fmt.Sprintf("%d jobs with a malformed diff not dead-lettered", r.PoisonNotDeadLettered))
	}
	if r.FeedbackLeft > 0 {
		f = append(f, fmt.Sprintf("%d feedback messages never processed", r.FeedbackLeft))
	}
	if r.ConfirmationDuplicates > 0 || r.ConfirmationsLost > 0 || r.VotesLost > 0 || r.ReplyLeft > 0 {
		f = append(f, fmt.Sprintf("replies: %d duplicate and %d lost confirmations, %d lost votes, %d reply messages never processed",
			r.ConfirmationDuplicates, r.ConfirmationsLost, r.VotesLost, r.ReplyLeft))
	}
	if r.OwedLost > 0 || r.OwedWrong > 0 {
		f = append(f, fmt.Sprintf("owed: %d lost, %d wrong", r.OwedLost, r.OwedWrong))
	}
	if r.CodeHostLost > 0 || r.CodeHostDuplicates > 0 {
		f = append(f, fmt.Sprintf("status on the change: %d lost, %d posted twice", r.CodeHostLost, r.CodeHostDuplicates))
	}
	if r.ForgedActed > 0 {
		f = append(f, fmt.Sprintf("%d forged replies acted on", r.ForgedActed))
	}
	if r.NotAccepted > 0 {
		f = append(f, fmt.Sprintf("%d webhooks never accepted", r.NotAccepted))
	}
	if n := r.intake.Unexpected.Load(); n > 0 {
		f = append(f, fmt.Sprintf("%d unexpected intake answers", n))
	}
	if r.Stray > 0 || r.Misaddressed > 0 {
		f = append(f, fmt.Sprintf("%d stray and %d misaddressed emails", r.Stray, r.Misaddressed))
	}
	for _, l := range r.LogLeaks {
		f = append(f, "leak in "+l)
	}
	for _, l := range r.DLQLeaks {
		f = append(f, "leak in "+l)
	}
	f = append(f, r.hooks.failures()...)
	if len(r.Problems) > 0 && len(f) == 0 {
		f = append(f, r.Problems...)
	}
	return f
}

// Print writes the table and the totals.
func (r *Report) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "FAULT KIND\tINJECTED\tJOBS HIT\tRECOVERED\tDEAD-LETTERED\tDUPLICATES\tLOST\tSTUCK\t")
	var tot KindRow
	for _, row := range r.Rows() {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", row.Kind, row.Injected, row.Jobs, row.Recovered, row.DeadLettered, row.Duplicates, row.Lost, row.Stuck)
		tot.Injected += row.Injected
	}
	fmt.Fprintf(tw, "all jobs\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", tot.Injected, r.Accepted-r.Unhit, r.Delivered, r.DeadLettered, r.Duplicates, r.Lost, r.Stuck)
	tw.Flush()

	fmt.Fprintln(w, "\ninjected by call:")
	for _, k := range pickable() {
		ops := r.ByOp[k]
		names := make([]string, 0, len(ops))
		for op := range ops {
			names = append(names, op)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, op := range names {
			parts[i] = fmt.Sprintf("%s %d", op, ops[op])
		}
		fmt.Fprintf(w, "  %-12s %s\n", k, strings.Join(parts, ", "))
	}
	in := &r.intake
	fmt.Fprintf(w, "\nintake: %d deliveries posted, %d retried by the sender after %d 5xx, %d crashed (502) and %d broken connections; answers: %d accepted, %d replayed, %d existing job; %d gave up, %d unexpected\n",
		in.Posts.Load(), in.Retries.Load(), in.Answers5xx.Load(), in.Crashed502.Load(), in.TransportErrors.Load(),
		in.Accepted202.Load(), in.Replayed.Load(), in.Existing200.Load(), in.GaveUp.Load(), in.Unexpected.Load())
	fmt.Fprintf(w, "jobs: %d posted, %d accepted (%d untouched by faults): %d delivered, %d dead-lettered (%d with a malformed diff, %d good ones whose budget faults exhausted; %d needs_intervention), %d lost, %d stuck, %d never accepted\n",
		r.Jobs, r.Accepted, r.Unhit, r.Delivered, r.DeadLettered, r.Poisoned-r.PoisonNotDeadLettered, r.DeadLetteredHealthy, r.NeedsIntervention, r.Lost, r.Stuck, r.NotAccepted)
	fmt.Fprintf(w, "emails: %d, duplicates %d, stray %d, misaddressed %d\n", r.Emails, r.Duplicates, r.Stray, r.Misaddressed)
	fmt.Fprintf(w, "digests: %d daily readers; %d digest emails (%d sent while faults were on) showing %d of their versions (each counted in emails above)\n",
		r.DailyReaders, r.Digests, r.DigestsUnderFaults, r.DigestEntries)
	fmt.Fprintf(w, "dead letters: %d in the stage DLQs (%d raw, moved by the redrive policy), %d in the feedback DLQ; %d delivered jobs also left one\n",
		r.DLQMessages, r.RawDLQ, r.FeedbackDLQ, r.DeliveredWithDLQ)
	fmt.Fprintf(w, "platform: invocations killed at their timeout: fetch %d, llm %d, notify %d, feedback %d; feedback messages held 18–36 s: %d (%d Send events of sends whose answer was lost); doomed to the feedback DLQ: %d, redriven by %d move tasks: %d messages with new ids (%d tasks failed); validation notices: %d; feedback messages never processed: %d\n",
		r.Killed["fetch"], r.Killed["llm"], r.Killed["notify"], r.Killed["feedback"], r.HeldLate, r.HeldLostSends,
		r.Doomed, r.Redrives, r.Redriven, r.RedriveFailures, r.Notices, r.FeedbackLeft)
	fmt.Fprintf(w, "replies: %d sent over SMTP (%d delivered twice, %d not sent), %d redriven from the reply DLQ: confirmations %d, lost %d, duplicates %d; votes %d, lost %d; never processed %d\n",
		r.Replies, r.RepliesDoubled, r.ReplyErrors, r.RepliesRedriven, r.Confirmations, r.ConfirmationsLost, r.ConfirmationDuplicates,
		r.Votes, r.VotesLost, r.ReplyLeft)
	fmt.Fprintf(w, "owed: %d changes of two versions (pushed in order, late or at once; %d versions answered stale, %d with version 2 rejected or bounced after the Send, %d version jobs dead-lettered or held), with the code host's below: %d versions owed, %d mails reached their readers; %d lost, %d wrong; replies sent twice over SMTP %d, forged %d (acted on %d)\n",
		r.VersionChanges, r.VersionsStale, r.VersionsUndone, r.VersionsEnded, r.VersionsOwed, r.VersionsMailed, r.OwedLost, r.OwedWrong,
		r.RepliesResent, r.RepliesForged, r.ForgedActed)
	fmt.Fprintf(w, "owed, code host: %d GitHub pull requests pushed late, at once or forced (%d heads: %d answered stale, %d versions placed behind at fetch), counted in the owed line above\n",
		r.HostPulls, r.HostHeads, r.HostStale, r.HostSkipped)
	fmt.Fprintf(w, "owed, a stacked Gerrit change whose parent skips its author: %d, mailed to %d of its 2 reviewers, counted in the owed line above\n",
		r.GerritStacked, r.GerritMailed)
	fmt.Fprintf(w, "status on the change: %d versions show a finished commit status or review message (%d answers lost after the host took them); %d lost, %d posted twice\n",
		r.CodeHostStatuses, r.CodeHostLostAnswers, r.CodeHostLost, r.CodeHostDuplicates)
	fmt.Fprintln(w, r.hooks.line())
	fmt.Fprintf(w, "leaks: %d log lines and %d dead letters scanned for %d addresses and 5 planted secrets: %d found\n",
		r.LogLines, r.DLQMessages+r.FeedbackDLQ, r.addrCount, len(r.LogLeaks)+len(r.DLQLeaks))
	fmt.Fprintf(w, "worker restarts: %d; seed %d, rate %.3f, concurrency %d, duration %s\n",
		r.Restarts, r.Seed, r.Rate, r.Concurrency, r.Duration.Round(100*time.Millisecond))
	if r.StagesBusy > 0 {
		// The drain's timing out is the failure (DrainTimedOut); this
		// says which stage messages were still queued.
		fmt.Fprintf(w, "drain: the deadline passed with every job terminal and %d stage messages still queued (copies the sweeper re-enqueued, handed-back messages)\n", r.StagesBusy)
	}
	for _, p := range r.Problems {
		fmt.Fprintln(w, "PROBLEM:", p)
	}
	for _, e := range r.IntakeErrors {
		fmt.Fprintln(w, "INTAKE:", e)
	}
	if f := r.Failures(); len(f) > 0 {
		fmt.Fprintf(w, "FAIL: %s\n", strings.Join(f, "; "))
	} else {
		fmt.Fprintln(w, "PASS: every (changelist, recipient, version) emailed exactly once or its job dead-lettered with a complete envelope; nothing lost, stuck or leaked")
	}
}
