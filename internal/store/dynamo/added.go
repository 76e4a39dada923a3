package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/job"
)

// A reviewer added to a version after its reviewers were fetched
// (R-REVIEWERS-1) is written to the job item by the fetch stage's reviewer
// refresh, in three attributes besides job.Job's added_recipients:
const (
	// attrAddedNoEmail lists added reviewers without an address, as
	// "<source>:<username>" identities (a string set).
	attrAddedNoEmail = "added_no_email"
	attrAddedRecips  = "added_recipients"
	attrAddedRev     = "added_rev"
	attrAddedSeen    = "added_seen"
)

// AddReviewers adds reviewers to a version in one write: addresses to
// added_recipients and identities to added_no_email (string sets, so a
// repeat or a concurrent refresh changes nothing twice), and added_rev+1,
// which tells notify that it has someone new to mail. It returns the job
// as it is after the write. Fetch's own write of recipients does not touch
// these attributes: the two commute.
func (s *Jobs) AddReviewers(ctx context.Context, id job.ID, addrs, identities []string) (job.Job, error) {
	upd := expression.Add(expression.Name(attrAddedRev), expression.Value(1))
	if len(addrs) > 0 {
		upd = upd.Add(expression.Name(attrAddedRecips), expression.Value(&types.AttributeValueMemberSS{Value: addrs}))
	}
	if len(identities) > 0 {
		upd = upd.Add(expression.Name(attrAddedNoEmail), expression.Value(&types.AttributeValueMemberSS{Value: identities}))
	}
	attrs, err := conditionalUpdate(ctx, s.db, s.table, jobKey(id), upd, expression.AttributeExists(expression.Name("pk")), types.ReturnValueAllNew)
	if err != nil {
		return job.Job{}, fmt.Errorf("add reviewers to job %s: %w", id, err)
	}
	var it jobItem
	if err := unmarshal(attrs, &it); err != nil {
		return job.Job{}, err
	}
	return it.asJob(), nil
}

// FinishNotify records notify's verdict on a job whose rows it settled:
// succeeded (the job moves to done, R-OUTBOX-8) or needs_intervention (it
// stays at notify, R-OUTBOX-9), and that it mailed the added reviewers of
// revision addedRev (added_seen). Both on condition that the job is still
// at notify and no reviewer was added since notify read it: ErrConflict
// then, and notify runs again for the new reviewer.
func (s *Jobs) FinishNotify(ctx context.Context, id job.ID, attempt int, status job.Status, addedRev int) error {
	now := ts(s.now())
	upd := expression.Set(expression.Name("status"), expression.Value(string(status))).
		Set(expression.Name("updated_at"), expression.Value(now)).
		Set(expression.Name(attrAddedSeen), expression.Value(addedRev))
	if status == job.StatusSucceeded {
		upd = upd.Set(expression.Name("stage"), expression.Value(string(job.StageDone))).
			Set(expression.Name("attempts."+string(job.StageNotify)), expression.Value(attempt)).
			Remove(expression.Name("last_error"))
	}
	upd = sweepJobFor(upd, status)
	cond := expression.Name("stage").Equal(expression.Value(string(job.StageNotify))).And(sameAddedRev(addedRev))
	return s.update(ctx, id, upd, &cond)
}

// sameAddedRev is "added_rev is rev", where a job nobody added to has no
// added_rev.
func sameAddedRev(rev int) expression.ConditionBuilder {
	c := expression.Name(attrAddedRev).Equal(expression.Value(rev))
	if rev == 0 {
		c = expression.AttributeNotExists(expression.Name(attrAddedRev)).Or(c)
	}
	return c
}
