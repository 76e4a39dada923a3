package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// A versioned rerun (R-RERUN-1: "Reprocessing is allowed as a
// versioned rerun only with a new review_version (e.g., v3 -> v4), which
// creates new delivery intents under new keys") is an operator's request to
// review a changelist again and mail its recipients again. It is a new job
// for the next review version, copying what the latest job carries, so the
// new job's delivery ids (which derive from the version) are new keys.

var _ store.Reruns = (*Jobs)(nil)

// PlanRerun reads the changelist's latest job and what a rerun of it
// copies. ErrNotFound when the changelist is unknown. It writes nothing:
// a dry run is PlanRerun alone.
func (s *Jobs) PlanRerun(ctx context.Context, source, changelistID string) (store.RerunPlan, error) {
	v, id, err := s.LatestVersion(ctx, source, changelistID)
	if err != nil {
		return store.RerunPlan{}, err
	}
	latest, err := s.Get(ctx, id)
	if err != nil {
		return store.RerunPlan{}, fmt.Errorf("latest job of changelist (version %d): %w", v, err)
	}
	p := store.RerunPlan{Latest: latest, NextVersion: v + 1}
	if ref, err := s.GetSourceRef(ctx, id); err == nil {
		p.SourceRef = &ref
	} else if !errors.Is(err, store.ErrNotFound) {
		return store.RerunPlan{}, err
	}
	if p.NoEmailReviewers, err = s.NoEmailReviewers(ctx, id); err != nil {
		return store.RerunPlan{}, err
	}
	counter, ok, err := s.versionCounter(ctx, source, changelistID)
	if err != nil {
		return store.RerunPlan{}, err
	}
	if ok && counter+1 > p.NextVersion {
		p.NextVersion = counter + 1
	}
	return p, nil
}

// rerunJobItem is a rerun's job item: a job plus where it came from.
type rerunJobItem struct {
	jobItem
	RerunOf     job.ID `dynamodbav:"rerun_of"`
	RerunReason string `dynamodbav:"rerun_reason"`
}

// Rerun creates the job of the next review version of req.Plan's
// changelist, a copy of its latest job (title, url, author, recipients,
// diff reference or URL, and for code review systems the source reference,
// so fetch reads the same commit and resolves the reviewers again), in
// state accepted at stage fetch. The caller enqueues fetch.
//
// Concurrent reruns cannot create the same version twice, nor two versions
// from one plan: the job is put on condition that it does not exist, and in
// the same transaction the changelist head moves to the new version on
// condition that it still names the planned latest version. The loser gets
// a *RerunConflictError naming the version now current.
//
// The version is the planned latest + 1, except for sources whose versions
// come from the per-changelist counter (GitHub, GitLab: AssignVersion),
// where the counter is advanced first, so a commit pushed later never draws
// the number the rerun took. Where the webhook carries the version (the
// generic review_version, the Gerrit patch set number) the rerun takes the
// next number the caller would use: a later webhook with that number finds
// the job exists (200, nothing new), so the caller's next version must be
// above the rerun's.
func (s *Jobs) Rerun(ctx context.Context, req store.RerunRequest) (job.Job, error) {
	p := req.Plan
	latest := p.Latest
	version := latest.ReviewVersion + 1
	n, ok, err := s.advanceCounter(ctx, latest.Source, latest.ChangelistID)
	if err != nil {
		return job.Job{}, err
	}
	if ok && n > version {
		version = n
	}
	now := s.now().UTC()
	j := job.Job{
		ID: job.NewID(latest.Source, latest.ChangelistID, version), Source: latest.Source, ChangelistID: latest.ChangelistID,
		ReviewVersion: version, Title: latest.Title, Description: latest.Description, URL: latest.URL, Author: latest.Author,
		Recipients: latest.AllRecipients(), DiffURL: latest.DiffURL, Repository: latest.Repository,
		Status: job.StatusAccepted, Stage: job.StageFetch, Attempts: job.Attempts{}, CreatedAt: now, UpdatedAt: now,
		// An operator asked for it: mailed to every recipient (R-RERUN-2).
		Explicit: true, RerunOf: latest.ID,
	}
	if p.SourceRef == nil {
		// The diff is content-addressed and already stored: fetch finds
		// it and moves on. (A job that never got past fetch has only its
		// diff_url, which fetch downloads again.)
		j.DiffRef, j.DiffSHA256, j.DiffTruncated = latest.DiffRef, latest.DiffSHA256, latest.DiffTruncated
	} else {
		// The reference is recorded before the job exists, as intake does,
		// so a job of a code review system always has one.
		if err := s.PutSourceRef(ctx, j.ID, *p.SourceRef); err != nil {
			return job.Job{}, err
		}
	}
	item, err := marshal(rerunJobItem{jobItem: newJobItem(j, "", expiresAt(s.now(), s.Retention)),
		RerunOf: latest.ID, RerunReason: req.Reason})
	if err != nil {
		return job.Job{}, err
	}
	head, err := expression.NewBuilder().
		WithUpdate(expression.Set(expression.Name("latest_version"), expression.Value(version)).
			Set(expression.Name("latest_job_id"), expression.Value(string(j.ID))).
			Set(expression.Name("updated_at"), expression.Value(ts(now)))).
		WithCondition(expression.Name("latest_version").Equal(expression.Value(latest.ReviewVersion))).
		Build()
	if err != nil {
		return job.Job{}, fmt.Errorf("build head update: %w", err)
	}
	input := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: &s.table, Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Update: &types.Update{TableName: &s.table, Key: map[string]types.AttributeValue{"pk": str(schema.PrefixChangelist + job.ChangelistKey(j.Source, j.ChangelistID))},
			UpdateExpression: head.Update(), ConditionExpression: head.Condition(),
			ExpressionAttributeNames: head.Names(), ExpressionAttributeValues: head.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
	}}
	for attempt := 0; ; attempt++ {
		// A retry after a TransactionConflict is a new transaction, with a
		// token of its own (txToken, R-STORE-2).
		if input.ClientRequestToken, err = txToken(); err != nil {
			return job.Job{}, fmt.Errorf("rerun %s: %w", j.ID, err)
		}
		_, err = s.db.TransactWriteItems(ctx, input)
		if err == nil {
			return j, nil
		}
		var canceled *types.TransactionCanceledException
		if !errors.As(err, &canceled) {
			return job.Job{}, fmt.Errorf("rerun %s: %w", j.ID, err)
		}
		reasons := canceled.CancellationReasons
		conflict := false
		for _, r := range reasons {
			conflict = conflict || aws.ToString(r.Code) == "TransactionConflict"
		}
		if conflict && attempt < 8 {
			// A concurrent transaction on the head is in flight; once it
			// commits, the retry fails its condition and says so.
			select {
			case <-ctx.Done():
				return job.Job{}, ctx.Err()
			case <-time.After(time.Duration(10*(attempt+1)) * time.Millisecond):
			}
			continue
		}
		current := version
		if len(reasons) == 2 && aws.ToString(reasons[1].Code) == "ConditionalCheckFailed" && len(reasons[1].Item) > 0 {
			var h headItem
			if err := unmarshal(reasons[1].Item, &h); err == nil {
				current = h.LatestVersion
			}
		}
		return job.Job{}, &store.RerunConflictError{Planned: latest.ReviewVersion, Current: current}
	}
}

// versionCounter reads the changelist's version counter (VSEQ), if it has
// one.
func (s *Jobs) versionCounter(ctx context.Context, source, changelistID string) (int, bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": str(counterPK(source, changelistID))}})
	if err != nil {
		return 0, false, fmt.Errorf("get the version counter: %w", err)
	}
	if len(out.Item) == 0 {
		return 0, false, nil
	}
	return counterValue(out.Item)
}

// advanceCounter draws the next number from the changelist's version
// counter if it has one; a changelist without a counter (its versions come
// from the webhook) is left without one.
func (s *Jobs) advanceCounter(ctx context.Context, source, changelistID string) (int, bool, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       map[string]types.AttributeValue{"pk": str(counterPK(source, changelistID))},
		UpdateExpression:          aws.String("ADD last_version :one SET updated_at = :now"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}, ":now": str(ts(s.now()))},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("advance the version counter: %w", err)
	}
	return counterValue(out.Attributes)
}

func counterValue(item map[string]types.AttributeValue) (int, bool, error) {
	n, ok := item["last_version"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false, fmt.Errorf("version counter: no last_version")
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		return 0, false, fmt.Errorf("version counter: bad last_version %q", n.Value)
	}
	return v, true, nil
}
