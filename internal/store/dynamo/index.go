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
// Setting Live to the value it has writes nothing to the index (its keys,
// Live and CreatedAt, are unchanged), so a stage's write costs the item
// alone. Sweep is dropped either way: a job written before the index
// moved (schema.IndexLiveJobsV1) leaves the old index at its first write
// and, if still unfinished, enters the new one in the same write.
func sweepJobFor(upd expression.UpdateBuilder, status job.Status) expression.UpdateBuilder {
	upd = upd.Remove(expression.Name(schema.Sweep))
	if status.Terminal() {
		return upd.Remove(expression.Name(schema.Live))
	}
	return upd.Set(expression.Name(schema.Live), expression.Value(sweepJob))
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
