package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/job"
)

// PinBase records sha as the commit of merged code a job's repository
// files are read at (SourceRef.BaseSHA), unless its source reference
// names one already, and returns the one it names: the first attempt's
// pin is every later attempt's (R-SOURCE-5), so a retry, a redrive or a
// rerun reads the same settings and markers, whatever the destination
// branch did since. One conditional UpdateItem: a retry of a write that
// succeeded fails its condition and reads the pin back. A job without a
// source reference is ErrNotFound.
func (s *Jobs) PinBase(ctx context.Context, id job.ID, sha string) (string, error) {
	if strings.TrimSpace(sha) == "" {
		return "", fmt.Errorf("pin the base of %s: no commit given", id)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.table, Key: sourceRefKey(id),
		UpdateExpression:          aws.String("SET #b = :b"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND attribute_not_exists(#b)"),
		ExpressionAttributeNames:  map[string]string{"#b": "base_sha"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":b": str(sha)}})
	if err == nil {
		return sha, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return "", fmt.Errorf("pin the base of %s: %w", id, err)
	}
	ref, err := s.GetSourceRef(ctx, id)
	if err != nil {
		return "", err
	}
	if ref.BaseSHA == "" {
		// The condition failed on a reference with no base: only an
		// item without a key could do it.
		return "", fmt.Errorf("pin the base of %s: the source reference refused a base it does not have", id)
	}
	return ref.BaseSHA, nil
}
