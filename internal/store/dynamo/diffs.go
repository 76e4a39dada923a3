package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// The versions of a changelist that carry one diff content
// (schema.PrefixDiff): notify keeps them (R-QUIET-1), so a version whose diff
// content was mailed to a recipient before is not mailed to them again,
// whatever its commit.
func diffPK(changelistKey, diffSHA string) string {
	return schema.PrefixDiff + changelistKey + "#" + diffSHA
}

// SameDiff records that version of the changelist has diff content
// diffSHA and returns every version recorded with that content, this one
// included, in ascending order. One UpdateItem: a number set ADD, so a
// repeat (an SDK retry, a second notifier) records nothing twice and
// concurrent versions never lose each other's entry; the answer (ALL_NEW)
// is the read.
func (s *Jobs) SameDiff(ctx context.Context, changelistKey, diffSHA string, version int) ([]int, error) {
	upd := "ADD versions :v"
	vals := map[string]types.AttributeValue{":v": &types.AttributeValueMemberNS{Value: []string{strconv.Itoa(version)}}}
	if exp := expiresAt(s.now(), s.Retention); exp != 0 {
		// Kept as long as the versions it names.
		upd += " SET expires_at = :e"
		vals[":e"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(exp, 10)}
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: map[string]types.AttributeValue{"pk": str(diffPK(changelistKey, diffSHA))},
		UpdateExpression: aws.String(upd), ExpressionAttributeValues: vals, ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return nil, fmt.Errorf("record the diff of %s v%d: %w", changelistKey, version, err)
	}
	ns, _ := out.Attributes["versions"].(*types.AttributeValueMemberNS)
	if ns == nil {
		return nil, fmt.Errorf("record the diff of %s v%d: no versions in the answer", changelistKey, version)
	}
	vs := make([]int, 0, len(ns.Value))
	for _, v := range ns.Value {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("diff of %s: version %q: %w", changelistKey, v, err)
		}
		vs = append(vs, n)
	}
	slices.Sort(vs)
	return vs, nil
}
