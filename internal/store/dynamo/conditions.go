package dynamo

import (
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/criticizer/criticizer/internal/delivery"
)

// statusIn is "status IN (…)" for a set the domain exports, so a status set
// is stated once, in its package (delivery.ClaimableStatuses,
// job.Unfinished…), and the store's conditions follow it.
func statusIn[S ~string](set []S) expression.ConditionBuilder {
	if len(set) == 0 {
		panic("store: an empty status set")
	}
	vals := make([]expression.OperandBuilder, len(set))
	for i, s := range set {
		vals[i] = expression.Value(string(s))
	}
	return expression.Name(attrStatus).In(vals[0], vals[1:]...)
}

// claimableStatus is the claim's status condition.
func claimableStatus() expression.ConditionBuilder { return statusIn(delivery.ClaimableStatuses()) }
