// Package job holds the review job: its identity, states, stages and the rules
// that decide whether a new webhook starts work. It is pure: no AWS imports, so
// every rule here is tested with plain Go tests.
package job

import (
	"crypto/sha256"
	"encoding/base32"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Status is where a job is in its life. The values are stored in DynamoDB and
// shown by GET /jobs/{id}; never rename one.
type Status string

const (
	// StatusAccepted: persisted by intake, not yet picked up by a stage.
	StatusAccepted Status = "accepted"
	// StatusInProgress: a stage has started work.
	StatusInProgress Status = "in_progress"
	// StatusRetryableFailed: the last attempt failed with a retryable error and
	// the stage will be retried (R-OUTBOX-8).
	StatusRetryableFailed Status = "retryable_failed"
	// StatusSucceeded: every required recipient's delivery row has notified_at
	// (R-OUTBOX-8).
	StatusSucceeded Status = "succeeded"
	// StatusNeedsIntervention: at least one recipient failed permanently
	// (invalid recipient, policy rejection; R-OUTBOX-9); an operator or the
	// caller must act.
	StatusNeedsIntervention Status = "needs_intervention"
	// StatusDeadLettered: a stage exhausted its budget or failed non-retryably;
	// the envelope is in that stage's DLQ (R-STAGE-3, R-STAGE-4).
	StatusDeadLettered Status = "dead_lettered"
	// StatusBudgetExceeded: the llm stage refused the model run, the
	// changelist's or the author's budget being spent (R-BUDGET-1);
	// nobody is mailed, nothing is dead-lettered, SkipReason says which.
	StatusBudgetExceeded Status = "budget_exceeded"
	// StatusNoRecipients: no reviewer of the version has an address, so
	// the model was not run (R-BUDGET-2); a reviewer with an address
	// added later starts the review.
	StatusNoRecipients Status = "no_recipients"
)

// Statuses are every job status.
func Statuses() []Status {
	return []Status{StatusAccepted, StatusInProgress, StatusRetryableFailed, StatusSucceeded, StatusNeedsIntervention, StatusDeadLettered,
		StatusBudgetExceeded, StatusNoRecipients}
}

// Unfinished are the statuses a stage may still move: those not Terminal.
func Unfinished() []Status {
	var out []Status
	for _, s := range Statuses() {
		if !s.Terminal() {
			out = append(out, s)
		}
	}
	return out
}

// Terminal reports whether no stage will touch the job again without an
// operator (replay) or a new review version.
func (s Status) Terminal() bool {
	switch s {
	case StatusSucceeded, StatusNeedsIntervention, StatusDeadLettered, StatusBudgetExceeded, StatusNoRecipients:
		return true
	}
	return false
}

// Final reports whether no stage's own write may move the job any more:
// it succeeded, or a stage was dead-lettered. Only an operator's replay
// or a reopen for a delivery moves it on from there. The other terminal
// statuses are left by their own stage (notify works on a job it holds
// needs_intervention; fetch restarts a no_recipients review).
func (s Status) Final() bool { return s == StatusSucceeded || s == StatusDeadLettered }

// Stage names one step of the pipeline. Each stage has its own queue, its own
// dead-letter queue and its own attempt budget (R-STAGE-3).
type Stage string

const (
	StageFetch  Stage = "fetch"
	StageLLM    Stage = "llm"
	StageNotify Stage = "notify"
	// StageDone is not a queue: the job has passed every stage.
	StageDone Stage = "done"
)

// Stages lists the queue-backed stages in pipeline order.
var stages = [...]Stage{StageFetch, StageLLM, StageNotify}

// Stages returns the queue-backed stages in pipeline order.
func Stages() []Stage { return append([]Stage(nil), stages[:]...) }

// Valid reports whether s is a queue-backed stage.
func (s Stage) Valid() bool { return s.order() >= 0 && s != StageDone }

func (s Stage) order() int {
	switch s {
	case StageFetch:
		return 0
	case StageLLM:
		return 1
	case StageNotify:
		return 2
	case StageDone:
		return 3
	}
	return -1
}

// Next is the stage after s; StageNotify is followed by StageDone.
func (s Stage) Next() Stage {
	switch s {
	case StageFetch:
		return StageLLM
	case StageLLM:
		return StageNotify
	}
	return StageDone
}

// Before reports whether s comes strictly before t in the pipeline.
func (s Stage) Before(t Stage) bool { return s.order() < t.order() }

// ID is a job's identifier. It is derived from (source, changelist_id,
// review_version), so the same review version can never have two jobs: the
// uniqueness of (changelist_id, review_version) required by R-INTAKE-3 is the
// uniqueness of the DynamoDB key.
type ID string

// NewID derives the job id for a review version of a changelist.
func NewID(source, changelistID string, reviewVersion int) ID {
	return ID("j_" + hash("job", source, changelistID, strconv.Itoa(reviewVersion)))
}

// ChangelistKey scopes a changelist id to its source, so GitHub PR 7 and a
// generic changelist "7" never collide.
func ChangelistKey(source, changelistID string) string {
	return source + ":" + changelistID
}

// hash is a short, URL-safe, case-insensitive hash of the parts, which are
// joined with a separator that cannot appear ambiguously (length-prefixed).
func hash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	sum := h.Sum(nil)
	enc := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:20])
	return strings.ToLower(enc)
}

// Hash exposes the same derivation to sibling packages (delivery ids), so
// every deterministic id in the system is built one way.
func Hash(parts ...string) string { return hash(parts...) }

// Job is the state of one review version of one changelist.
type Job struct {
	ID            ID     `json:"job_id"`
	Source        string `json:"source"`
	ChangelistID  string `json:"changelist_id"`
	ReviewVersion int    `json:"review_version"`
	Title         string `json:"title"`
	// Description is the pull request's description (untrusted; given to
	// the model as data), at most 4 KB.
	Description string `json:"description,omitempty"`
	URL         string `json:"url"`
	Author      string `json:"author"`
	// Repository is the repository a generic caller named (its optional
	// "repository" field, R-INTAKE-7); empty for the code hosts, whose
	// changelist id holds theirs (RepositoryName).
	Repository string   `json:"repository,omitempty"`
	Recipients []string `json:"-"`
	// AddedRecipients are the addresses of reviewers added to this version
	// after its reviewers were fetched (R-REVIEWERS-1): a set the fetch
	// stage's reviewer refresh adds to, so additions commute with each
	// other and with the fetch that set Recipients.
	AddedRecipients []string `json:"-"`
	// AddedRev counts the changes to what notify must deliver for the
	// version: refreshes that added someone (R-REVIEWERS-1), and rows
	// reopened to be sent again (store.Jobs.Reopen: a transient bounce,
	// an operator's verdict); AddedSeen is the count notify last finalized
	// with. Notify finalizes only the revision it read, so a reviewer
	// added or a row reopened while it ran is not lost, and a refresh that
	// finds AddedRev ahead of AddedSeen makes sure notify runs again.
	AddedRev  int `json:"-"`
	AddedSeen int `json:"-"`
	// UnexpandedTeams are requested teams (GitHub) whose members the
	// fetch stage's token could not read: nobody in them was mailed.
	UnexpandedTeams []string `json:"unexpanded_teams,omitempty"`
	DiffURL         string   `json:"-"`
	DiffRef         string   `json:"-"`
	DiffSHA256      string   `json:"-"`
	// DiffTruncated: the source served more than the size limit and fetch
	// kept a prefix cut at a file boundary; the critique says so.
	DiffTruncated bool      `json:"diff_truncated,omitempty"`
	Status        Status    `json:"status"`
	Stage         Stage     `json:"stage"`
	Attempts      Attempts  `json:"attempts"`
	LastError     *Failure  `json:"last_error,omitempty"`
	DeadLetter    *Failure  `json:"dead_letter,omitempty"`
	Critique      []byte    `json:"-"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	// RerunOf names the job an operator's rerun copied (POST
	// /admin/rerun; the store writes it with the job); empty for a job a
	// webhook started. The llm stage reviews such a job afresh rather than
	// building on the last review.
	RerunOf ID `json:"-"`
	// Explicit marks a version someone asked for by number: a generic
	// webhook's review_version without the quiet opt-in, or an
	// operator's rerun. Every recipient of an explicit version is mailed
	// (R-RERUN-2); the quiet rules judge only the versions Criticizer
	// derives from a code host's events (see Quiet). False on jobs
	// stored before the field existed: they keep the rules they had.
	Explicit bool `json:"explicit,omitempty"`
	// Settings are what the repository's .criticizer.yaml at the base of
	// the reviewed version asks of its review (R-REPO-1, R-REPO-6); nil:
	// defaults.
	Settings *RepoSettings `json:"repo_settings,omitempty"`
	// SettingsWarnings say what was wrong with that file (unknown keys,
	// bad globs, too large...), and that its review ran with defaults.
	SettingsWarnings []string `json:"settings_warnings,omitempty"`
	// GeneratedAtBase are the files the fetch stage found carrying a
	// generated-code marker in their base version's first lines, read
	// through the source's API (R-CRITIC-7): only they, of the files whose
	// marker the diff cannot confirm at the base, are left out as
	// generated.
	GeneratedAtBase []string `json:"generated_at_base,omitempty"`
	// DiffBaseUnmerged: the commit the diff is against is not merged code
	// (a Gerrit change made on another open change): what the diff shows
	// of its base decides nothing generated (R-CRITIC-7).
	DiffBaseUnmerged bool `json:"diff_base_unmerged,omitempty"`
	// ContextRef names the blob of the changed files as the version's head
	// has them, read by the fetch stage for the code around each hunk
	// (R-CONTEXT-1): a JSON object by path, in S3 like the diff, never in
	// the item. Empty: the hunks alone.
	ContextRef string `json:"context_ref,omitempty"`
	// Skipped, when set, says why the version was not reviewed (an author
	// or label the repository's settings skip, R-REPO-4): the job ends
	// succeeded with no model run and nobody mailed.
	Skipped string `json:"skipped,omitempty"`
	// SkipReason says why the llm stage ran no model for a job that is
	// budget_exceeded or no_recipients (R-BUDGET-1, R-BUDGET-2).
	SkipReason string `json:"skip_reason,omitempty"`
	// TeamMembersNotMailed counts, per requested team, the members past
	// the cap who were not mailed (R-REVIEWERS-6).
	TeamMembersNotMailed map[string]int `json:"team_members_not_mailed,omitempty"`
}

// RepositoryName is the repository the version belongs to, as people name
// it: a generic caller's Repository, or the part of a code host's
// changelist id before its number ("acme/billing" of "acme/billing#7",
// "group/proj" of "group/proj!3", "project" of "project~42"); "" when
// neither names one.
func (j Job) RepositoryName() string {
	if j.Repository != "" {
		return j.Repository
	}
	if IsReviewSystem(j.Source) {
		if i := strings.LastIndexAny(j.ChangelistID, "#!~"); i > 0 {
			return j.ChangelistID[:i]
		}
	}
	return ""
}

// Quiet reports whether the quiet rules (R-QUIET-1..3) may settle the
// version's rows without a send, and whether it may supersede an older
// version: true for a version derived from a code host's events (a
// GitHub synchronize, a GitLab update, a Gerrit patch set) or a generic
// one that opted in; false for an explicit version (R-RERUN-2), an
// operator's rerun among them.
func (j Job) Quiet() bool { return !j.Explicit && j.RerunOf == "" }

// AllRecipients are the version's recipients: those its fetch found, then
// those added since (sorted), each once.
func (j Job) AllRecipients() []string {
	out := append([]string(nil), j.Recipients...)
	seen := make(map[string]bool, len(out))
	for _, r := range out {
		seen[r] = true
	}
	added := append([]string(nil), j.AddedRecipients...)
	slices.Sort(added)
	for _, r := range added {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// Attempts counts the attempts each stage has made; budgets are per stage and
// never shared (R-STAGE-3).
type Attempts map[Stage]int

// Failure records the last failure of a stage, for GET /jobs and triage. It
// carries the class only, never the error text, which may hold PII.
type Failure struct {
	Stage      Stage     `json:"stage"`
	ErrorClass string    `json:"error_class"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
	EnvelopeID string    `json:"envelope_id,omitempty"`
}

// Message is the body of every stage queue message. It carries ids only, never
// content: the state lives in DynamoDB, so a message is safe to dead-letter and
// to replay (R-STAGE-4).
type Message struct {
	JobID ID    `json:"job_id"`
	Stage Stage `json:"stage"`
	// ReplayOf names the dead-letter envelope this message replays, if any.
	ReplayOf string `json:"replay_of,omitempty"`
	// Task, when set, asks the stage for a side task on the job rather
	// than the job's own stage work: TaskReviewers, TaskDigest. A task's failures are
	// not the job's (the job's status and attempts are left alone); they
	// are retried, and dead-lettered, like any message.
	Task string `json:"task,omitempty"`
	// Delivery names the delivery row a task is about (TaskReply; a
	// TaskPost's post row, which names its channel and phase).
	Delivery string `json:"delivery_id,omitempty"`
	// Phase is the phase a TaskPost without a row announces (channel.Phase).
	Phase string `json:"phase,omitempty"`
	// Deferral is set on a copy the stage runner re-sent after a
	// rate-limited attempt (see internal/stage). Absent on every message
	// any other component sends.
	Deferral *Deferral `json:"deferral,omitempty"`
}

// TaskReviewers asks the fetch stage to look again at who reviews the
// job's version and to add anyone new (R-REVIEWERS-1): a reviewer was
// requested after the version's reviewers were fetched.
const TaskReviewers = "reviewers"

// TaskDigest asks the notify stage to close and send one recipient's
// daily digest (R-DIGEST-3). A digest has no job: JobID then names the
// digest's row (delivery.DigestID), which is all the message carries.
const TaskDigest = "digest"

// TaskReply asks the notify stage to send the confirmation of a reply
// (R-REPLY-5): the delivery row Message.Delivery names, which the reply
// function wrote. The job is the one whose email was answered; its own
// status and attempts are left alone.
const TaskReply = "reply"

// TaskPost asks the notify stage to post the job's version to the
// channels other than email (a check run, a commit status, a signed
// webhook): without Delivery, it announces Message.Phase (notify creates
// a post row per channel and a TaskPost for each); with Delivery, it sends
// that post row, which names its channel and phase (R-CHANNEL-4). Its
// failures are its own: email and the job's status never wait on it.
const TaskPost = "post"

// Deferral is the bookkeeping a rate-limited message carries to its
// re-sent copy. SQS counts receives per message, so a fresh copy starts at
// receive count 1; what the earlier copies spent travels here.
type Deferral struct {
	// Spent is how many attempts of the earlier copies counted against
	// the stage's budget (failures other than rate limiting).
	Spent int `json:"spent"`
	// Count is how many times the message was deferred for rate limiting
	// (or for provider evidence): attempts that did not count against the
	// budget, capped by the stage runner.
	Count int `json:"count"`
	// Paused is how many times the message was deferred because the
	// provider's daily quota was spent (QUOTA_EXHAUSTED, R-RATE-3):
	// attempts charged neither to the budget nor to Count's cap.
	Paused int `json:"paused,omitempty"`
}

// BudgetAttempt is the 1-based attempt number that counts against the
// stage's budget (R-STAGE-3) for a message received receiveCount
// times: rate-limited attempts of earlier copies are not in it.
func (m Message) BudgetAttempt(receiveCount int) int {
	if m.Deferral == nil {
		return receiveCount
	}
	return m.Deferral.Spent + receiveCount
}

// Tries is how many times the stage has run this message, rate-limited
// attempts included: what GET /jobs shows as the stage's attempts.
func (m Message) Tries(receiveCount int) int {
	if m.Deferral == nil {
		return receiveCount
	}
	return m.Deferral.Spent + m.Deferral.Count + m.Deferral.Paused + receiveCount
}

// Deferred returns the copy to re-send after the attempt numbered
// receiveCount failed with rate limiting: that attempt is not charged to
// the budget, so Spent takes only the receives before it.
func (m Message) Deferred(receiveCount int) Message {
	var d Deferral
	if m.Deferral != nil {
		d = *m.Deferral
	}
	d.Spent += max(receiveCount, 1) - 1
	d.Count++
	m.Deferral = &d
	return m
}

// PausedCopy returns the copy to re-send after the attempt numbered
// receiveCount found the provider's daily quota spent: like Deferred, but
// counted in Paused, so a long pause never uses up the deferrals a rate
// limit may take afterwards.
func (m Message) PausedCopy(receiveCount int) Message {
	var d Deferral
	if m.Deferral != nil {
		d = *m.Deferral
	}
	d.Spent += max(receiveCount, 1) - 1
	d.Paused++
	m.Deferral = &d
	return m
}
