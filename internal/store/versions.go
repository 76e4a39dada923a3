package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store/schema"
)

// Code review systems (GitHub, GitLab, Gerrit) add three more kinds of item
// to the jobs table:
//
//	VSEQ#<source>:<changelist>          the changelist's version counter
//	                                    (last_version, advanced with ADD)
//	SHA#<source>:<changelist>#<sha>     the review version of a head commit
//	SRC#<job_id>                        the job's source reference: where
//	                                    fetch finds the diff and reviewers
//
// and two attributes to a job item, written by the fetch stage in the same
// Advance as the diff reference: recipients (the resolved addresses, the
// job's existing field) and AttrNoEmailReviewers.

// AttrNoEmailReviewers is the job attribute listing the reviewers the fetch
// stage could not resolve to an address, as "<source>:<username>"
// identities. Each becomes a skipped_no_email delivery row.
const AttrNoEmailReviewers = "no_email_reviewers"

// AttrRecipients is the job attribute holding the resolved addresses
// (job.Job.Recipients).
const AttrRecipients = "recipients"

// AttrDiffTruncated marks a job whose fetched diff was cut at the limit.
const AttrDiffTruncated = "diff_truncated"

// versionItem maps a head commit to its review version.
type versionItem struct {
	PK            string `dynamodbav:"pk"`
	Kind          string `dynamodbav:"kind"`
	Source        string `dynamodbav:"source"`
	ChangelistID  string `dynamodbav:"changelist_id"`
	HeadSHA       string `dynamodbav:"head_sha"`
	ReviewVersion int    `dynamodbav:"review_version"`
	CreatedAt     string `dynamodbav:"created_at"`
}

func versionPK(source, changelistID, headSHA string) string {
	return schema.PrefixHeadSHA + job.ChangelistKey(source, changelistID) + "#" + headSHA
}

func counterPK(source, changelistID string) string {
	return schema.PrefixVersionSeq + job.ChangelistKey(source, changelistID)
}

// AssignVersion returns the review version of a changelist's head commit,
// allocating the next one the first time the commit is seen. The same
// commit always gets the same version, across duplicate and concurrent
// deliveries; a commit seen later gets a higher version than every commit
// seen before it.
//
// The mapping is one item per commit, created with a conditional put; the
// number comes from a per-changelist counter advanced with an atomic ADD.
// A caller that loses the race to create the mapping reads the winner's
// version from the cancellation (ALL_OLD) and returns it; the number it
// drew is left unused, so versions are increasing but may have gaps.
func (s *DynamoJobs) AssignVersion(ctx context.Context, source, changelistID, headSHA string) (int, error) {
	if source == "" || changelistID == "" || headSHA == "" {
		return 0, fmt.Errorf("assign version: source, changelist and head commit are required")
	}
	pk := versionPK(source, changelistID, headSHA)
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": str(pk)}})
	if err != nil {
		return 0, fmt.Errorf("get version of a head commit: %w", err)
	}
	if len(out.Item) > 0 {
		return versionOf(out.Item)
	}
	upd, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       map[string]types.AttributeValue{"pk": str(counterPK(source, changelistID))},
		UpdateExpression:          aws.String("ADD last_version :one SET kind = :kind, updated_at = :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}, ":kind": str("version_counter"), ":now": str(ts(s.now()))},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, fmt.Errorf("advance the version counter: %w", err)
	}
	n, ok := upd.Attributes["last_version"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("advance the version counter: no last_version in the answer")
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("advance the version counter: bad last_version %q", n.Value)
	}
	item, err := marshal(versionItem{PK: pk, Kind: "version", Source: source, ChangelistID: changelistID, HeadSHA: headSHA,
		ReviewVersion: v, CreatedAt: ts(s.now())})
	if err != nil {
		return 0, err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	if err == nil {
		return v, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if len(ccf.Item) > 0 {
			return versionOf(ccf.Item)
		}
		// An emulator that does not return the old item: read it.
		out, gerr := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": str(pk)}})
		if gerr != nil {
			return 0, fmt.Errorf("get version of a head commit: %w", gerr)
		}
		return versionOf(out.Item)
	}
	return 0, fmt.Errorf("record version of a head commit: %w", err)
}

func versionOf(item map[string]types.AttributeValue) (int, error) {
	var it versionItem
	if err := unmarshal(item, &it); err != nil {
		return 0, err
	}
	if it.ReviewVersion < 1 {
		return 0, fmt.Errorf("version item %s has no review version", it.PK)
	}
	return it.ReviewVersion, nil
}

// SourceRef is where a job's changelist lives in its code review system,
// and who the webhook named as reviewers. Intake records it before the job
// exists (so a job of these sources always has one); the fetch stage reads
// it.
type SourceRef struct {
	Source  string `dynamodbav:"source"`
	Repo    string `dynamodbav:"repo"`
	Number  int    `dynamodbav:"number"`
	HeadSHA string `dynamodbav:"head_sha"`
	// BaseSHA is the base commit the webhook named (GitHub), empty when
	// it named none: the fetch stage reviews HeadSHA against it and reads
	// the repository's settings there (R-SOURCE-5).
	BaseSHA string `dynamodbav:"base_sha,omitempty"`
	// Patchset is the Gerrit patch set number; 0 for the other sources.
	Patchset int `dynamodbav:"patchset"`
	// Reviewers are the usernames the webhook payload named.
	Reviewers []string `dynamodbav:"reviewers"`
	// Labels are the change's labels as the payload named them
	// (webhook.Labels), for the repository's skip_labels (R-REPO-4).
	Labels []string `dynamodbav:"labels,omitempty"`
}

type sourceRefItem struct {
	PK    string `dynamodbav:"pk"`
	Kind  string `dynamodbav:"kind"`
	JobID job.ID `dynamodbav:"job_id"`
	SourceRef
	CreatedAt string `dynamodbav:"created_at"`
}

func sourceRefKey(id job.ID) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixSourceRef + string(id))}
}

// PutSourceRef records a job's source reference unless it already has one:
// the first delivery's is kept. For a given job id (source, changelist,
// version) the reference names the same commit whichever delivery wrote it.
func (s *DynamoJobs) PutSourceRef(ctx context.Context, id job.ID, ref SourceRef) error {
	if ref.Reviewers == nil {
		ref.Reviewers = []string{}
	}
	item, err := marshal(sourceRefItem{PK: schema.PrefixSourceRef + string(id), Kind: "source_ref", JobID: id, SourceRef: ref, CreatedAt: ts(s.now())})
	if err != nil {
		return err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)")})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("record source reference of %s: %w", id, err)
	}
	return nil
}

// GetSourceRef reads a job's source reference, or ErrNotFound.
func (s *DynamoJobs) GetSourceRef(ctx context.Context, id job.ID) (SourceRef, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: sourceRefKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return SourceRef{}, fmt.Errorf("get source reference of %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return SourceRef{}, fmt.Errorf("source reference of %s: %w", id, ErrNotFound)
	}
	var it sourceRefItem
	if err := unmarshal(out.Item, &it); err != nil {
		return SourceRef{}, err
	}
	return it.SourceRef, nil
}

// NoEmailReviewers reads a job's reviewers without an address, as
// "<source>:<username>" identities: those its fetch found
// (AttrNoEmailReviewers), then those added since (AttrAddedNoEmail,
// sorted), each once. A job without either (every generic job, any job
// before fetch) has none.
func (s *DynamoJobs) NoEmailReviewers(ctx context.Context, id job.ID) ([]string, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: jobKey(id), ConsistentRead: aws.Bool(true),
		ProjectionExpression:     aws.String("#n, #a"),
		ExpressionAttributeNames: map[string]string{"#n": AttrNoEmailReviewers, "#a": AttrAddedNoEmail}})
	if err != nil {
		return nil, fmt.Errorf("get reviewers without an address of %s: %w", id, err)
	}
	var it struct {
		Identities []string `dynamodbav:"no_email_reviewers"`
		Added      []string `dynamodbav:"added_no_email,stringset"`
	}
	if err := unmarshal(out.Item, &it); err != nil {
		return nil, err
	}
	return UnionSorted(it.Identities, it.Added), nil
}

// UnionSorted is first, then the members of added not in it, sorted: how
// a version's fetched and added reviewers are listed.
func UnionSorted(first, added []string) []string {
	out := append([]string(nil), first...)
	seen := make(map[string]bool, len(out))
	for _, v := range out {
		seen[v] = true
	}
	rest := append([]string(nil), added...)
	slices.Sort(rest)
	for _, v := range rest {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
