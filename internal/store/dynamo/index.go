package dynamo

import (
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// The sweeps' sparse indexes and the directory's are named in
// internal/store/dynamo/schema: an item carries schema.Sweep only while a sweep
// may need to look at it, with one of these values.
const (
	sweepJob = "job"
	sweepRow = "row"
)

// sweepJobFor keeps a job in the live index while status is unfinished.
func sweepJobFor(upd expression.UpdateBuilder, status job.Status) expression.UpdateBuilder {
	if status.Terminal() {
		return upd.Remove(expression.Name(schema.Sweep))
	}
	return upd.Set(expression.Name(schema.Sweep), expression.Value(sweepJob))
}

// sweepRowIn puts a row in the live index; sweepRowOut takes it out.
func sweepRowIn(upd expression.UpdateBuilder) expression.UpdateBuilder {
	return upd.Set(expression.Name(schema.Sweep), expression.Value(sweepRow))
}

func sweepRowOut(upd expression.UpdateBuilder) expression.UpdateBuilder {
	return upd.Remove(expression.Name(schema.Sweep))
}

// live reports whether a row stays in the live index after an event: in
// flight, held or under reconciliation (a sent row with evidence is done).
func live(s delivery.Status) bool {
	for _, u := range delivery.UnsettledStatuses() {
		if s == u {
			return true
		}
	}
	return false
}
