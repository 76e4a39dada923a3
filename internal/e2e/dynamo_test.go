package e2e

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func scanJobs(table string) *dynamodb.ScanInput {
	return &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
}

func countKind(items []map[string]types.AttributeValue, kind string) int {
	n := 0
	for _, it := range items {
		if k, ok := it["kind"].(*types.AttributeValueMemberS); ok && k.Value == kind {
			n++
		}
	}
	return n
}
