package store

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
)

// Sparse indexes for the sweeps (R-COST-1). An item carries the attribute
// "sweep" only while a sweep may need to look at it: a job while it is
// unfinished, a delivery row while it is in flight, held, under
// reconciliation, or sent and not yet confirmed by a provider event. The
// index holds those items only, so a sweep reads about as many items as
// there is live work, whatever the history; every write that moves an item
// in or out of that set sets or removes the attribute in the same write.
//
// The indexes project keys only. DynamoDB bills a write to an item in an
// index again for the index's copy, by the copy's size: with every
// attribute projected, each claim, mark and event of a live row and each
// status write of a job billed the whole item twice (20 of a 1-recipient
// review's 55 write units). A keys-only copy is written only when an item
// enters or leaves the index (and, for a job, when its updated_at moves),
// for one unit; the sweeps read the few live items whole afterwards.
const (
	// IndexLiveJobs is the jobs table's index: sweep (= "job") and
	// updated_at, so stuck jobs are a key range.
	IndexLiveJobs = "LiveJobs"
	// IndexLiveDeliveries is the deliveries table's index: sweep (= "row").
	IndexLiveDeliveries = "LiveDeliveries"
	// IndexDirectory is the jobs table's index of reviewer directory
	// entries (directory.go): directory (= source) and directory_user (the
	// username's key). Only entries carry those attributes.
	IndexDirectory = "Directory"

	attrSweep = "sweep"
	sweepJob  = "job"
	sweepRow  = "row"
)

// JobsIndex is the jobs table's index and the attributes it needs, as
// CreateTable takes them (the local stack provisions with it; the CDK app
// and the SAM template declare the same, tested).
func JobsIndex() ([]types.AttributeDefinition, types.GlobalSecondaryIndex) {
	return []types.AttributeDefinition{
			{AttributeName: aws.String(attrSweep), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("updated_at"), AttributeType: types.ScalarAttributeTypeS},
		}, types.GlobalSecondaryIndex{
			IndexName: aws.String(IndexLiveJobs),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrSweep), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("updated_at"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}
}

// DirectoryIndex is the jobs table's directory index (see JobsIndex).
func DirectoryIndex() ([]types.AttributeDefinition, types.GlobalSecondaryIndex) {
	return []types.AttributeDefinition{
			{AttributeName: aws.String("directory"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("directory_user"), AttributeType: types.ScalarAttributeTypeS},
		}, types.GlobalSecondaryIndex{
			IndexName: aws.String(IndexDirectory),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("directory"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("directory_user"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}
}

// DeliveriesIndex is the deliveries table's index (see JobsIndex).
func DeliveriesIndex() ([]types.AttributeDefinition, types.GlobalSecondaryIndex) {
	return []types.AttributeDefinition{
			{AttributeName: aws.String(attrSweep), AttributeType: types.ScalarAttributeTypeS},
		}, types.GlobalSecondaryIndex{
			IndexName:  aws.String(IndexLiveDeliveries),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String(attrSweep), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}
}

// sweepJobFor keeps a job in the live index while status is unfinished.
func sweepJobFor(upd expression.UpdateBuilder, status job.Status) expression.UpdateBuilder {
	if status.Terminal() {
		return upd.Remove(expression.Name(attrSweep))
	}
	return upd.Set(expression.Name(attrSweep), expression.Value(sweepJob))
}

// sweepRowIn puts a row in the live index; sweepRowOut takes it out.
func sweepRowIn(upd expression.UpdateBuilder) expression.UpdateBuilder {
	return upd.Set(expression.Name(attrSweep), expression.Value(sweepRow))
}

func sweepRowOut(upd expression.UpdateBuilder) expression.UpdateBuilder {
	return upd.Remove(expression.Name(attrSweep))
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
