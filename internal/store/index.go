package store

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/schema"
)

// The sweeps' sparse indexes and the directory's are named in
// internal/store/schema: an item carries schema.Sweep only while a sweep
// may need to look at it, with one of these values.
const (
	sweepJob = "job"
	sweepRow = "row"
)

// JobsIndex is the jobs table's index and the attributes it needs, as
// CreateTable takes them (the local stack provisions with it; the CDK app
// and the SAM template declare the same, tested).
func JobsIndex() ([]types.AttributeDefinition, types.GlobalSecondaryIndex) {
	return []types.AttributeDefinition{
			{AttributeName: aws.String(schema.Sweep), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(schema.UpdatedAt), AttributeType: types.ScalarAttributeTypeS},
		}, types.GlobalSecondaryIndex{
			IndexName: aws.String(schema.IndexLiveJobs),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(schema.Sweep), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(schema.UpdatedAt), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}
}

// DirectoryIndex is the jobs table's directory index (see JobsIndex).
func DirectoryIndex() ([]types.AttributeDefinition, types.GlobalSecondaryIndex) {
	return []types.AttributeDefinition{
			{AttributeName: aws.String(schema.Directory), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(schema.DirectoryUser), AttributeType: types.ScalarAttributeTypeS},
		}, types.GlobalSecondaryIndex{
			IndexName: aws.String(schema.IndexDirectory),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(schema.Directory), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(schema.DirectoryUser), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}
}

// DeliveriesIndex is the deliveries table's index (see JobsIndex).
func DeliveriesIndex() ([]types.AttributeDefinition, types.GlobalSecondaryIndex) {
	return []types.AttributeDefinition{
			{AttributeName: aws.String(schema.Sweep), AttributeType: types.ScalarAttributeTypeS},
		}, types.GlobalSecondaryIndex{
			IndexName:  aws.String(schema.IndexLiveDeliveries),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String(schema.Sweep), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}
}

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
