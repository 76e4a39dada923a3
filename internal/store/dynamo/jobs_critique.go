package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// A job's critique is an item of its own in the jobs table, written once
// by the llm stage and never overwritten, keyed
//
//	JOB#<job id>#critique#<ref>
//
// and named by the job item's critique_ref (R-COST-5). Why apart: the
// critique is most of a job's bytes after llm (about 2.6 KB of JSON),
// and DynamoDB bills a write by the whole item's size per started KB, so
// with the critique inline every write after llm (notify's status
// writes, its verdict, a reopen) billed three units for a status flip.
// Apart, the job item stays under 1 KB and each of those writes bills
// one; the critique, compressed with the critiques' dictionary
// (compact.go), is written once, in one write unit for most.
//
// Why a fresh ref per write rather than one key per job: two llm runs of
// one job (a message delivered twice) each write their own critique item;
// the one whose Advance wins the stage's condition names its item in the
// same write, so the job never names a critique another run overwrote.
// The loser's item is left to its TTL. Why in the jobs table rather than
// S3 beside the diff: an S3 PUT costs $0.005 per 1,000, a 1 KB DynamoDB
// write $0.000625 per 1,000, and the item's key starts with JOB#, so the
// functions that read and write a job need no new grant.
//
// Jobs written before hold the critique inline (job.Job's critique
// attribute) and no critique_ref: they read as they did, and the next
// critique written to such a job drops the inline one.
const (
	attrCritiqueRef = "critique_ref"
	attrCritiqueZ   = "critique_z"
)

// critiqueKey is the key of job id's critique item ref.
func critiqueKey(id job.ID, ref string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixJob + string(id) + "#critique#" + ref)}
}

// putCritique writes critique c of job id in an item of its own and
// returns the ref the job item names it by. UpdateItem, not PutItem:
// it creates the item all the same, and is the write the llm function is
// granted on its job's items.
func (s *Jobs) putCritique(ctx context.Context, id job.ID, c []byte) (string, error) {
	var tok [8]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return "", fmt.Errorf("critique ref: %w", err)
	}
	ref := hex.EncodeToString(tok[:])
	z, err := compact(c, critiqueDicts, dictV1)
	if err != nil {
		return "", fmt.Errorf("compress critique of job %s: %w", id, err)
	}
	upd := expression.Set(expression.Name(attrCritiqueZ), expression.Value(z))
	if exp := expiresAt(s.now(), s.Retention); exp != 0 {
		upd = upd.Set(expression.Name(schema.ExpiresAt), expression.Value(exp))
	}
	// The ref is fresh: the condition fails only if it was drawn twice.
	if _, err := conditionalUpdate(ctx, s.db, s.table, critiqueKey(id, ref), upd,
		expression.AttributeNotExists(expression.Name("pk")), types.ReturnValueNone); err != nil {
		return "", fmt.Errorf("put critique of job %s: %w", id, err)
	}
	return ref, nil
}

// withCritique is the job item it as a job: with its critique read from
// its own item when the item names one (strongly consistent, one read
// unit: the critique item is written before the write that names it).
func (s *Jobs) withCritique(ctx context.Context, it jobItem) (job.Job, error) {
	j := it.asJob()
	if it.CritiqueRef == "" {
		return j, nil
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: critiqueKey(j.ID, it.CritiqueRef),
		ConsistentRead: aws.Bool(true)})
	if err != nil {
		return job.Job{}, fmt.Errorf("get critique of job %s: %w", j.ID, err)
	}
	z, ok := out.Item[attrCritiqueZ].(*types.AttributeValueMemberB)
	if !ok {
		// Gone (a TTL ran out before the job's own) or never written:
		// the job reads as one without a critique.
		return j, nil
	}
	if j.Critique, err = expand(z.Value, critiqueDicts); err != nil {
		return job.Job{}, fmt.Errorf("critique of job %s: %w", j.ID, err)
	}
	return j, nil
}

// critiqueWrite adds w's critique to a job item's update: the ref of the
// critique item putCritique wrote, and the inline critique of a job
// written before dropped.
func critiqueWrite(upd expression.UpdateBuilder, ref string) expression.UpdateBuilder {
	return upd.Set(expression.Name(attrCritiqueRef), expression.Value(ref)).Remove(expression.Name(attrCritique))
}
