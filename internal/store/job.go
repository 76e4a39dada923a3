package store

import (
	"context"
	"time"

	"github.com/criticizer/criticizer/internal/job"
)

// CreateRequest is everything intake persists for a new webhook in one
// transaction.
type CreateRequest struct {
	Job               job.Job
	IdempotencyKeySHA string // sha256 hex of the caller's key
	RequestSHA256     string // sha256 hex of the raw request body
	ResponseStatus    int
	ResponseBody      []byte
	TTL               time.Duration
	// Placed: the version was placed in its code host's order
	// (PlaceHead, R-SOURCE-6), which decided it is not stale. A version
	// below the changelist's head is then created all the same, the head
	// left where it is: a head placed pending may draw a number above a
	// newer head placed at the same time and have its job created first,
	// and the newer one must not be refused for good. The fetch stage
	// then skips whichever the host places behind, and R-QUIET-3 mails
	// a lower version only when no higher one reaches its reader.
	Placed bool
}

// Outcome says what Create found.
type Outcome int

const (
	// Created: the job, the idempotency record and the head were written.
	Created Outcome = iota
	// Replayed: the key was seen with the same request; Response holds the
	// original status and body.
	Replayed
	// KeyReused: the key was seen with a different request (HTTP 422).
	KeyReused
	// VersionExists: a job for this review version exists under another key;
	// Job holds it (R-INTAKE-3: same version is a no-op).
	VersionExists
	// Stale: a higher version is already accepted; CurrentVersion says which.
	Stale
)

// CreateResult is Create's answer.
type CreateResult struct {
	Outcome        Outcome
	Job            job.Job // the existing job for Replayed and VersionExists
	ResponseStatus int
	ResponseBody   []byte
	CurrentVersion int
}

// Jobs is the jobs table's one contract: every method both drivers keep
// of jobs, their idempotency records, their changelists' heads and head
// commits (Heads), their source references and their diff contents.
// dynamo.Jobs keeps it on DynamoDB and memstore.Jobs in memory;
// storetest.Jobs proves them alike, the whole contract, each condition
// refusing (R-STORE-1). A consumer that takes less names a role
// interface of its own and says why (pipeline.Jobs: what the explorer
// interposes on). What dynamo.Jobs alone keeps (dead-letter audit records,
// delivery notes, reruns: the operator's, never run on memstore) is not
// part of it.
type Jobs interface {
	Heads

	// Create writes a job, its idempotency record and its changelist's
	// head, each on its condition (CreateRequest, Outcome).
	Create(ctx context.Context, req CreateRequest) (CreateResult, error)
	// Get reads a job, strongly consistent; ErrNotFound if none.
	Get(ctx context.Context, id job.ID) (job.Job, error)
	// LatestVersion reads a changelist's head: its latest accepted
	// version and that version's job; ErrNotFound if none.
	LatestVersion(ctx context.Context, source, changelistID string) (int, job.ID, error)
	// ThreadTitle and KeepThreadTitle read and keep the title a
	// changelist's emails are named by (R-THREAD-1).
	ThreadTitle(ctx context.Context, source, changelistID string) (string, error)
	KeepThreadTitle(ctx context.Context, source, changelistID, title string) (string, error)
	// AssignVersion places a head commit its event says nothing more of
	// (AssignVersionOf).
	AssignVersion(ctx context.Context, source, changelistID, headSHA string) (int, error)
	// PutSourceRef, GetSourceRef and PinBase keep where fetch finds a
	// version's diff and reviewers; the first write stays.
	PutSourceRef(ctx context.Context, id job.ID, ref SourceRef) error
	GetSourceRef(ctx context.Context, id job.ID) (SourceRef, error)
	PinBase(ctx context.Context, id job.ID, sha string) (string, error)
	// SameDiff records a version's diff content and answers every
	// version of the changelist with it (R-QUIET-1).
	SameDiff(ctx context.Context, changelistKey, diffSHA string, version int) ([]int, error)

	// Advance moves a job past stage from, writing the stage's results
	// (JobWrite), on condition that the job is still at from;
	// ErrConflict otherwise (R-STAGE-7).
	Advance(ctx context.Context, id job.ID, from job.Stage, attempt int, status job.Status, w JobWrite) error
	// SetStatus sets a job's status and the stage's results, on
	// condition that the job is at stage at and not in a final status;
	// ErrConflict otherwise.
	SetStatus(ctx context.Context, id job.ID, at job.Stage, status job.Status, w JobWrite) error
	// NoEmailReviewers reads a version's reviewers without an address:
	// those fetch found, then those added since.
	NoEmailReviewers(ctx context.Context, id job.ID) ([]string, error)
	// AddReviewers adds reviewers to a version in one write and returns
	// the job after it (R-REVIEWERS-1).
	AddReviewers(ctx context.Context, id job.ID, addrs, identities []string) (job.Job, error)
	// FinishNotify records notify's verdict, on condition that the job
	// is at notify and no reviewer was added since notify read it.
	FinishNotify(ctx context.Context, id job.ID, attempt int, status job.Status, addedRev int) error
	// RecordFailure records a stage's failure and returns when the stage
	// first failed (R-STAGE-4); never on a succeeded job.
	RecordFailure(ctx context.Context, id job.ID, f job.Failure, status job.Status) (time.Time, error)
	// Restart moves a dead-lettered job back to stage at (the operator's
	// replay).
	Restart(ctx context.Context, id job.ID, at job.Stage, refetch bool) error
	// Reopen and Intervene move a job back to notify, or hold it for an
	// operator; never a dead-lettered one.
	Reopen(ctx context.Context, id job.ID) error
	Intervene(ctx context.Context, id job.ID) error
	// StuckJobs calls fn for every unfinished job not updated since
	// before.
	StuckJobs(ctx context.Context, before time.Time, fn func(job.Job) error) error
}
