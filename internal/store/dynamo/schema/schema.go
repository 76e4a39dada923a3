// Package schema names the store's tables: their keys, the sparse indexes
// the sweeps and the directory read, and the key prefixes of the item kinds
// the jobs table holds. It is plain data, imported by the store (which
// reads and writes these items), by the deployment's description
// (internal/deploy: the tables it creates, the IAM conditions that confine
// a function to some item kinds) and by the local stack, so that each name
// is written once. The store's conformance suite, run against DynamoDB
// Local with tables created from this schema, proves the store uses them.
//
// A prefix or an attribute here never changes once shipped: existing items
// would be orphaned.
package schema

// The tables' keys and their TTL attribute.
const (
	// JobsKey is the jobs table's partition key: every item kind below,
	// each under its prefix.
	JobsKey = "pk"
	// DeliveriesKey is the deliveries table's partition key.
	DeliveriesKey = "delivery_id"
	// ExpiresAt is both tables' TTL attribute (Unix seconds).
	ExpiresAt = "expires_at"
)

// The jobs table holds several kinds of item under one partition key
// (JobsKey); each kind's key starts with its prefix.
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
	PrefixMute        = "MUTE#"           // a reader muted a changelist by reply: MUTE#<changelist key>#<recipient id>
	PrefixReplyWindow = "REPLYWIN#"       // the replies to one email in an hour: REPLYWIN#<delivery id>#<hour, Unix seconds>
	PrefixReplyClaim  = "REPLYACT#"       // the receipt that acts on a reply: REPLYACT#<its confirmation's delivery id>
	PrefixLearning    = "LEARN#"          // a repository's learnings, its readers' tally per rule: LEARN#<repository digest>
	// PrefixBudget keys a model-run budget's window:
	// BUDGET#<name>#<key>#<window start, Unix seconds> (R-BUDGET-1).
	PrefixBudget = "BUDGET#"
	// The reviewer webhooks' replay records (R-BUDGET-3): a reviewer event
	// seen, RDELIVERY#<source>#<delivery id>; its verified body seen,
	// RBODY#<source>#<sha256 of the body>; and a reviewer refresh
	// scheduled, REFRESH#<job id>.
	PrefixReviewerDelivery = "RDELIVERY#"
	PrefixReviewerBody     = "RBODY#"
	PrefixRefresh          = "REFRESH#"
	// The send-rate windows (RATE#<name>#<second>) are the rate limiter's
	// (internal/ratelimit), in the same table.
)

// Sparse indexes for the sweeps (R-COST-1). An item carries the attribute
// Sweep only while a sweep may need to look at it: a job while it is
// unfinished, a delivery row while it is in flight, held, under
// reconciliation, or sent and not yet confirmed by a provider event. The
// index holds those items only, so a sweep reads about as many items as
// there is live work, whatever the history.
//
// The live indexes project keys only. DynamoDB bills a write to an item in
// an index again for the index's copy, by the copy's size: a keys-only copy
// is written only when an item enters or leaves the index (and, for a job,
// when its UpdatedAt moves), for one unit; the sweeps read the few live
// items whole afterwards.
const (
	// IndexLiveJobs is the jobs table's index: Sweep (= "job") and
	// UpdatedAt, so stuck jobs are a key range.
	IndexLiveJobs = "LiveJobs"
	// IndexLiveDeliveries is the deliveries table's index: Sweep (= "row").
	IndexLiveDeliveries = "LiveDeliveries"
	// IndexDirectory is the jobs table's index of reviewer directory
	// entries: Directory (= source) and DirectoryUser (the username's key),
	// every attribute projected. Only entries carry those attributes.
	IndexDirectory = "Directory"

	Sweep         = "sweep"
	UpdatedAt     = "updated_at"
	Directory     = "directory"
	DirectoryUser = "directory_user"
)

// Index is a global secondary index: its keys (string attributes) and
// whether it projects every attribute or the keys only.
type Index struct {
	Name string
	// Hash and Range are its key attributes; Range may be empty.
	Hash, Range string
	// All projects every attribute; otherwise keys only.
	All bool
}

// Table is one table: its partition key (a string), and its indexes.
type Table struct {
	Key     string
	Indexes []Index
}

// Jobs is the jobs table: jobs and every other item kind above.
func Jobs() Table {
	return Table{Key: JobsKey, Indexes: []Index{
		{Name: IndexLiveJobs, Hash: Sweep, Range: UpdatedAt},
		{Name: IndexDirectory, Hash: Directory, Range: DirectoryUser, All: true},
	}}
}

// Deliveries is the deliveries table: one row per recipient and version.
func Deliveries() Table {
	return Table{Key: DeliveriesKey, Indexes: []Index{{Name: IndexLiveDeliveries, Hash: Sweep}}}
}
