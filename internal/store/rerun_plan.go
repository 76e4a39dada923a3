package store

import (
	"context"
	"fmt"

	"github.com/criticizer/criticizer/internal/job"
)

// Reruns is the operator's versioned rerun of a changelist (R-RERUN-1): a
// new job for the next review version, copying what the latest job
// carries. It is kept on DynamoDB alone (dynamo.Jobs); memstore has no
// operator. PlanRerun writes nothing (a dry run is PlanRerun alone) and
// answers ErrNotFound for an unknown changelist; Rerun answers a
// *RerunConflictError when the changelist moved on since the plan.
type Reruns interface {
	PlanRerun(ctx context.Context, source, changelistID string) (RerunPlan, error)
	Rerun(ctx context.Context, req RerunRequest) (job.Job, error)
}

// RerunPlan is what a rerun of a changelist copies, read by PlanRerun.
type RerunPlan struct {
	// Latest is the changelist's latest job: the one a rerun copies.
	Latest job.Job
	// NoEmailReviewers are Latest's reviewers without an address
	// (Jobs.NoEmailReviewers), each a "<source>:<username>" identity.
	NoEmailReviewers []string
	// SourceRef is Latest's source reference (code review systems); nil
	// for the generic source.
	SourceRef *SourceRef
	// NextVersion is the version a rerun would take if nothing else
	// arrives first (a webhook or a concurrent rerun may take it).
	NextVersion int
}

// RerunConflictError says the changelist moved on between PlanRerun and
// Rerun: another rerun or a webhook accepted a newer version first. It
// wraps ErrConflict.
type RerunConflictError struct {
	Planned, Current int
}

func (e *RerunConflictError) Error() string {
	return fmt.Sprintf("the changelist's latest version is now %d, not %d: a concurrent rerun or webhook accepted a newer version", e.Current, e.Planned)
}

func (e *RerunConflictError) Unwrap() error { return ErrConflict }

// RerunRequest is a rerun to perform: the plan it starts from and the
// operator's reason, kept on the new job for the audit trail.
type RerunRequest struct {
	Plan   RerunPlan
	Reason string
}
