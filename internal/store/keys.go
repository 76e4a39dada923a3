package store

// The jobs table holds several kinds of item under one partition key
// ("pk"); each kind's key starts with its prefix. They are stated here
// once: the IAM grants of the deployment name some of them (fetch and llm
// may touch JOB# and SRC# items only; infra/names.go), and a prefix never
// changes once shipped, or existing items are orphaned.
const (
	PrefixJob         = "JOB#"            // a job: JOB#<job id>
	PrefixChangelist  = "CL#"             // a changelist's head version and thread title: CL#<source>:<changelist id>
	PrefixIdempotency = "IDEM#"           // an idempotency record: IDEM#<source>#<sha256 of the key>
	PrefixDeadLetter  = "DL#"             // an operator's dead-letter audit: DL#<envelope id>
	PrefixAudit       = "AUDIT#DELIVERY#" // a delivery's audit trail: AUDIT#DELIVERY#<delivery id>
	PrefixEvidence    = "EVIDENCE#"       // the evidence watermark: EVIDENCE#<configuration set>
	PrefixPreference  = "PREF#"           // a recipient's preference record (mutes, unsubscribe, delivery mode, minimum severity): PREF#<recipient id>
	PrefixSuppression = "SUPP#"           // a suppressed address: SUPP#<recipient id>
	PrefixHeadSHA     = "SHA#"            // a head commit's version: SHA#<changelist key>#<sha>
	PrefixVersionSeq  = "VSEQ#"           // a changelist's version counter: VSEQ#<changelist key>
	PrefixSourceRef   = "SRC#"            // a job's source reference: SRC#<job id>
	PrefixRoster      = "ROSTER#"         // a changelist's reviewer roster: ROSTER#<changelist key>
	PrefixDirectory   = "DIR#"            // a reviewer directory entry: DIR#<source>#<lower-case username>
	PrefixUnknown     = "UNKNOWN#"        // reviewers without an address: UNKNOWN#<source>
	PrefixVote        = "VOTE#"           // a reader's vote on a finding: VOTE#<delivery id>#<finding id>
	PrefixDiff        = "DIFF#"           // versions with one diff content: DIFF#<changelist key>#<diff sha256>
	PrefixDismissal   = "DISMISS#"        // a reader's marks on a changelist's findings: DISMISS#<changelist key>#<recipient id>
	// The send-rate windows (RATE#<name>#<second>) are the rate limiter's
	// (internal/ratelimit), in the same table.
)
