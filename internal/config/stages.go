package config

import "time"

// LLM holds the settings only the llm function reads (internal/wire/llm):
// which critic, the model's settings, the review's, and when its result
// is handed on. GeneratedPaths, which fetch reads too, stays in Config.
type LLM struct {
	// Critic selects the reviewer: CriticOffline (default), CriticBedrock
	// or CriticOpenAI, with the settings of the one chosen.
	Critic         string
	BedrockModelID string
	OpenAI         OpenAI
	// ModelTimeout is the longest one model call may take (deadlines.go).
	ModelTimeout time.Duration
	// MaxFindings caps a model review's findings.
	MaxFindings int
	// ReviewInstructions are the deployment's extra instructions to the
	// model; ReviewInstructionsByRepo more per changelist id prefix
	// ("acme/store" for "acme/store#42").
	ReviewInstructions       string
	ReviewInstructionsByRepo map[string]string
	// IncrementalReview: a rerun sends the critic only the files changed
	// since the last reviewed version and its email says what changed
	// (critic.Incremental); off, every version is reviewed whole and
	// mailed as a first review.
	IncrementalReview bool
	// FullReviewEvery: a rerun reviews every file again when the full
	// review it builds on is this many versions old (R-LEDGER-3).
	FullReviewEvery int
	// CollapseWindow delays the notify stage of a version until this long
	// after it was accepted, applied where llm enqueues notify; zero: no
	// wait (R-QUIET-3).
	CollapseWindow time.Duration
}

// Notify holds the settings only the notify function reads
// (internal/wire/notify): the claim's lease, the send rate, the quiet
// rules' switches and the severity floor. EvidenceMargin and
// UncertainSend, which the feedback function, the sweeper or the operator
// CLI read too, stay in Config.
type Notify struct {
	// CodeHost is the status posted on the change (codehost.go).
	CodeHost CodeHost
	// DeliveryLease is how long a claimed delivery is notify's
	// (CRITICIZER_DELIVERY_LEASE).
	DeliveryLease time.Duration
	// MaxSendRate is the SES account's maximum send rate (emails per
	// second) that every notifier together keeps under; 0 turns the
	// limiter off.
	MaxSendRate int
	// SESQuotaRecheck is how long a spent SES daily quota pauses sending
	// (CRITICIZER_SES_QUOTA_RECHECK, sesquota.go).
	SESQuotaRecheck time.Duration
	// MinSeverity hides findings below it from the email ("", "info",
	// "warning" or "error"); a repository's min_severity can raise it,
	// never lower it (R-REPO-5).
	MinSeverity string
	// MailSameDiff mails a version whose diff content the recipient was
	// mailed before (R-QUIET-1 off).
	MailSameDiff bool
	// MailUnchangedReruns mails a rerun whose review found nothing new
	// (R-QUIET-2 off).
	MailUnchangedReruns bool
}

// Sweep holds the settings only the sweeper reads (internal/wire/sweeper;
// cmd/devstack runs it on the same schedule). EvidenceMargin, which notify
// and the feedback function read too, stays in Config.
type Sweep struct {
	// Every is the sweeper's schedule (CRITICIZER_SWEEP_EVERY): readings
	// of the feedback queue further apart than twice this do not make one
	// run of clear readings (internal/drain).
	Every time.Duration
	// StuckAfter: a job unchanged this long is stuck
	// (CRITICIZER_SWEEP_STUCK_AFTER).
	StuckAfter time.Duration
	// EvidenceWindow: a sent delivery without evidence this long is
	// reconciled (CRITICIZER_EVIDENCE_WINDOW).
	EvidenceWindow time.Duration
}

// Reply holds the settings only the reply function reads
// (internal/wire/reply). InboundDomain, which notify reads too (the
// Reply-To it writes), stays in Config.
type Reply struct {
	// PerHour bounds the replies to one email acted on in an hour
	// (CRITICIZER_REPLIES_PER_HOUR, R-REPLY-6).
	PerHour int
}
