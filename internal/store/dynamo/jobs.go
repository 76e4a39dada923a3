package dynamo

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithyrand "github.com/aws/smithy-go/rand"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Jobs is the jobs table. It holds these kinds of item under one partition
// key `pk`:
//
//	JOB#<job_id>                 the job (one per changelist review version)
//	IDEM#<source>#<sha256(key)>  the idempotency record: request hash and the
//	                             exact response first returned (TTL expires_at)
//	CL#<source>:<changelist>     the changelist head: latest accepted version,
//	                             and the title its emails are named by (thread.go)
//
// and, kept by other repositories on the same table: per-head-SHA versions
// (versions.go), dead-letter audit records (audit.go), and recipients'
// preferences and suppressions (Recipients).
type Jobs struct {
	db    *dynamodb.Client
	table string
	now   store.Clock
	// Retention is how long a job and the audit items written here are
	// kept (DynamoDB TTL on expires_at, R-COST-2); zero keeps them forever.
	// Changelist heads, version counters, preferences and suppressions
	// never expire.
	Retention time.Duration
}

// expiresAt is the TTL of an item written now: epoch seconds, or 0 (none).
func expiresAt(now time.Time, retention time.Duration) int64 {
	if retention <= 0 {
		return 0
	}
	return now.Add(retention).Unix()
}

// NewJobs returns the jobs repository for table.
func NewJobs(db *dynamodb.Client, table string, now store.Clock) *Jobs {
	if now == nil {
		now = time.Now
	}
	return &Jobs{db: db, table: table, now: now}
}

func jobKey(id job.ID) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixJob + string(id))}
}

// jobItem is the stored form of a job.
type jobItem struct {
	PK   string `dynamodbav:"pk"`
	Kind string `dynamodbav:"kind"`
	jobRecord
	IdempotencyKeySHA string `dynamodbav:"idempotency_key_sha256"`
	// Sweep puts an unfinished job in the live index (index.go).
	Sweep string `dynamodbav:"sweep,omitempty"`
	// ExpiresAt is the job's TTL (Jobs.Retention), epoch seconds.
	ExpiresAt int64 `dynamodbav:"expires_at,omitempty"`
}

// newJobItem is a job as stored, in the live index while unfinished.
func newJobItem(j job.Job, keySHA string, expires int64) jobItem {
	it := jobItem{PK: schema.PrefixJob + string(j.ID), Kind: "job", jobRecord: stored[jobRecord](j), IdempotencyKeySHA: keySHA, ExpiresAt: expires}
	if !j.Status.Terminal() {
		it.Sweep = sweepJob
	}
	return it
}

// asJob is the job the item stores.
func (it jobItem) asJob() job.Job { return stored[job.Job](it.jobRecord) }

// idemItem is the stored idempotency record.
type idemItem struct {
	PK             string `dynamodbav:"pk"`
	Kind           string `dynamodbav:"kind"`
	JobID          job.ID `dynamodbav:"job_id"`
	RequestSHA256  string `dynamodbav:"request_sha256"`
	ResponseStatus int    `dynamodbav:"response_status"`
	ResponseBody   string `dynamodbav:"response_body"`
	CreatedAt      string `dynamodbav:"created_at"`
	ExpiresAt      int64  `dynamodbav:"expires_at"`
}

type headItem struct {
	PK            string `dynamodbav:"pk"`
	LatestVersion int    `dynamodbav:"latest_version"`
	LatestJobID   job.ID `dynamodbav:"latest_job_id"`
}

// Create writes the job, its idempotency record and the changelist head in
// one TransactWriteItems call, each with its own condition. On cancellation
// the old items come back in the cancellation reasons
// (ReturnValuesOnConditionCheckFailure=ALL_OLD), so a duplicate costs no
// second read.
//
// Why a transaction rather than one conditional put: two things must be
// unique, the caller's key (R-INTAKE-1) and (changelist, version) (R-INTAKE-3),
// and a DynamoDB condition covers one item. The transaction is one call.
func (s *Jobs) Create(ctx context.Context, req store.CreateRequest) (store.CreateResult, error) {
	j := req.Job
	now := s.now().UTC()
	jobAV, err := marshal(newJobItem(j, req.IdempotencyKeySHA, expiresAt(now, s.Retention)))
	if err != nil {
		return store.CreateResult{}, err
	}
	idemAV, err := marshal(idemItem{
		PK: idemPK(j.Source, req.IdempotencyKeySHA), Kind: "idempotency", JobID: j.ID,
		RequestSHA256: req.RequestSHA256, ResponseStatus: req.ResponseStatus, ResponseBody: string(req.ResponseBody),
		CreatedAt: ts(now), ExpiresAt: now.Add(req.TTL).Unix(),
	})
	if err != nil {
		return store.CreateResult{}, err
	}
	headUpd, err := expression.NewBuilder().
		WithUpdate(expression.Set(expression.Name("latest_version"), expression.Value(j.ReviewVersion)).
			Set(expression.Name("latest_job_id"), expression.Value(string(j.ID))).
			Set(expression.Name("updated_at"), expression.Value(ts(now))).
			// The first accepted version names the conversation (R-THREAD-1, thread.go).
			Set(expression.Name(attrThreadTitle), expression.IfNotExists(expression.Name(attrThreadTitle), expression.Value(j.Title)))).
		WithCondition(expression.AttributeNotExists(expression.Name("pk")).
			Or(expression.Name("latest_version").LessThan(expression.Value(j.ReviewVersion)))).
		Build()
	if err != nil {
		return store.CreateResult{}, fmt.Errorf("build head update: %w", err)
	}
	notExists := aws.String("attribute_not_exists(pk)")
	input := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: &s.table, Item: jobAV, ConditionExpression: notExists,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
		{Put: &types.Put{TableName: &s.table, Item: idemAV, ConditionExpression: notExists,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
		{Update: &types.Update{TableName: &s.table, Key: map[string]types.AttributeValue{"pk": str(schema.PrefixChangelist + job.ChangelistKey(j.Source, j.ChangelistID))},
			UpdateExpression: headUpd.Update(), ConditionExpression: headUpd.Condition(),
			ExpressionAttributeNames: headUpd.Names(), ExpressionAttributeValues: headUpd.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
	}}
	// TransactionConflict means a concurrent transaction on the same items is
	// in flight (two first requests racing); the loser retries briefly and
	// then sees the winner's items as a duplicate. Each retry is a new
	// transaction with a token of its own (txToken, R-STORE-2).
	for attempt := 0; ; attempt++ {
		if input.ClientRequestToken, err = txToken(); err != nil {
			return store.CreateResult{}, fmt.Errorf("create job %s: %w", j.ID, err)
		}
		_, err = s.db.TransactWriteItems(ctx, input)
		if err == nil {
			return store.CreateResult{Outcome: store.Created, Job: j, ResponseStatus: req.ResponseStatus, ResponseBody: req.ResponseBody}, nil
		}
		var canceled *types.TransactionCanceledException
		if !errors.As(err, &canceled) {
			return store.CreateResult{}, fmt.Errorf("create job %s: %w", j.ID, err)
		}
		res, conflict, derr := s.decideCanceled(canceled.CancellationReasons, req)
		if derr != nil {
			return store.CreateResult{}, derr
		}
		if !conflict && res.Outcome == store.Stale && req.Placed {
			return s.createBelowHead(ctx, req, input.TransactItems[:2])
		}
		if !conflict {
			return res, nil
		}
		if attempt >= 8 {
			return store.CreateResult{}, fmt.Errorf("create job %s: %w", j.ID, err)
		}
		select {
		case <-ctx.Done():
			return store.CreateResult{}, ctx.Err()
		case <-time.After(time.Duration(10*(attempt+1)) * time.Millisecond):
		}
	}
}

// createBelowHead creates a placed version below the changelist's head
// (CreateRequest.Placed): the job and its idempotency record, each on its
// condition, the head left as it is (it only ever moves up).
func (s *Jobs) createBelowHead(ctx context.Context, req store.CreateRequest, items []types.TransactWriteItem) (store.CreateResult, error) {
	input := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	for attempt := 0; ; attempt++ {
		var err error
		if input.ClientRequestToken, err = txToken(); err != nil {
			return store.CreateResult{}, fmt.Errorf("create job %s: %w", req.Job.ID, err)
		}
		_, err = s.db.TransactWriteItems(ctx, input)
		if err == nil {
			return store.CreateResult{Outcome: store.Created, Job: req.Job, ResponseStatus: req.ResponseStatus, ResponseBody: req.ResponseBody}, nil
		}
		var canceled *types.TransactionCanceledException
		if !errors.As(err, &canceled) || len(canceled.CancellationReasons) != 2 {
			return store.CreateResult{}, fmt.Errorf("create job %s: %w", req.Job.ID, err)
		}
		reasons := append(canceled.CancellationReasons, types.CancellationReason{Code: aws.String("None")})
		res, conflict, derr := s.decideCanceled(reasons, req)
		if derr != nil || !conflict {
			return res, derr
		}
		if attempt >= 8 {
			return store.CreateResult{}, fmt.Errorf("create job %s: %w", req.Job.ID, err)
		}
		select {
		case <-ctx.Done():
			return store.CreateResult{}, ctx.Err()
		case <-time.After(time.Duration(10*(attempt+1)) * time.Millisecond):
		}
	}
}

// txToken returns the ClientRequestToken of one logical attempt of a
// TransactWriteItems call: every attempt the store makes gets a fresh one,
// and the SDK's own retries of that call keep it (R-STORE-2).
//
// Why not leave it to the SDK: the SDK fills a token into the caller's
// input struct on the first call, so a store that retried a cancelled
// transaction by passing the same input again sent the first call's token
// again. DynamoDB documents what a token reused within 10 minutes answers
// after a success (the success, with nothing written) and with other
// parameters (IdempotentParameterMismatch), not after a cancellation: it
// could be answered as a replay of the cancellation, and a retry that
// waits for a concurrent transaction to finish would see that
// TransactionConflict again however long it waited. A cancelled
// transaction wrote nothing, so a fresh token loses nothing: the retry is
// a new transaction, which is what it is. The token still does its job
// within one call: an SDK retry of a request whose answer was lost carries
// the same token and is answered as a replay, not applied twice
// (TestTransactWriteItems_RetryAfterCancellationGetsAFreshToken).
func txToken() (*string, error) {
	t, err := smithyrand.NewUUID(rand.Reader).GetUUID()
	if err != nil {
		return nil, fmt.Errorf("transaction token: %w", err)
	}
	return aws.String(t), nil
}

func idemPK(source, keySHA string) string { return schema.PrefixIdempotency + source + "#" + keySHA }

// decideCanceled reads the cancellation reasons: [job, idempotency, head].
func (s *Jobs) decideCanceled(reasons []types.CancellationReason, req store.CreateRequest) (store.CreateResult, bool, error) {
	if len(reasons) != 3 {
		return store.CreateResult{}, false, fmt.Errorf("create job: %d cancellation reasons, want 3", len(reasons))
	}
	code := func(i int) string { return aws.ToString(reasons[i].Code) }
	for i := range reasons {
		if code(i) == "TransactionConflict" {
			return store.CreateResult{}, true, nil
		}
	}
	if code(1) == "ConditionalCheckFailed" {
		var idem idemItem
		if err := unmarshal(reasons[1].Item, &idem); err != nil {
			return store.CreateResult{}, false, err
		}
		if idem.RequestSHA256 != req.RequestSHA256 {
			return store.CreateResult{Outcome: store.KeyReused}, false, nil
		}
		res := store.CreateResult{Outcome: store.Replayed, ResponseStatus: idem.ResponseStatus, ResponseBody: []byte(idem.ResponseBody)}
		if code(0) == "ConditionalCheckFailed" && len(reasons[0].Item) > 0 {
			var it jobItem
			if err := unmarshal(reasons[0].Item, &it); err != nil {
				return store.CreateResult{}, false, err
			}
			res.Job = it.asJob()
		}
		return res, false, nil
	}
	if code(0) == "ConditionalCheckFailed" {
		var it jobItem
		if err := unmarshal(reasons[0].Item, &it); err != nil {
			return store.CreateResult{}, false, err
		}
		return store.CreateResult{Outcome: store.VersionExists, Job: it.asJob()}, false, nil
	}
	if code(2) == "ConditionalCheckFailed" {
		var h headItem
		if err := unmarshal(reasons[2].Item, &h); err != nil {
			return store.CreateResult{}, false, err
		}
		return store.CreateResult{Outcome: store.Stale, CurrentVersion: h.LatestVersion}, false, nil
	}
	return store.CreateResult{}, false, fmt.Errorf("create job: transaction canceled for an unexpected reason: %s/%s/%s", code(0), code(1), code(2))
}

// Get reads a job with a strongly consistent read.
func (s *Jobs) Get(ctx context.Context, id job.ID) (job.Job, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: jobKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return job.Job{}, fmt.Errorf("get job %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return job.Job{}, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	var it jobItem
	if err := unmarshal(out.Item, &it); err != nil {
		return job.Job{}, err
	}
	return it.asJob(), nil
}

// LatestVersion returns the changelist head: the latest accepted version and
// its job, or ErrNotFound.
func (s *Jobs) LatestVersion(ctx context.Context, source, changelistID string) (int, job.ID, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": str(schema.PrefixChangelist + job.ChangelistKey(source, changelistID))}})
	if err != nil {
		return 0, "", fmt.Errorf("get changelist head: %w", err)
	}
	if len(out.Item) == 0 {
		return 0, "", fmt.Errorf("changelist %s: %w", changelistID, store.ErrNotFound)
	}
	var h headItem
	if err := unmarshal(out.Item, &h); err != nil {
		return 0, "", err
	}
	return h.LatestVersion, h.LatestJobID, nil
}

// Advance records that stage `from` finished: it sets the next stage, the
// attempt count and the stage's results (JobWrite), on condition that the
// job is still at `from`. Work is persisted before the next stage is
// enqueued, so a retry never redoes it. ErrConflict means another worker
// advanced it first.
func (s *Jobs) Advance(ctx context.Context, id job.ID, from job.Stage, attempt int, status job.Status, w store.JobWrite) error {
	now := ts(s.now())
	upd := expression.Set(expression.Name("stage"), expression.Value(string(from.Next()))).
		Set(expression.Name("attempts."+string(from)), expression.Value(attempt)).
		Set(expression.Name("updated_at"), expression.Value(now)).
		Set(expression.Name("status"), expression.Value(string(status))).
		Remove(expression.Name("last_error"))
	upd = jobWriteUpdate(sweepJobFor(upd, status), w)
	cond := expression.Name("stage").Equal(expression.Value(string(from)))
	return s.update(ctx, id, upd, &cond)
}

// SetStatus sets the job status, on condition that the job is at stage
// `at` and not in a final status (job.Status.Final: succeeded or
// dead-lettered). A stage's status write is decided from a read of the
// job; one landing after the job finished, or after its stage was
// dead-lettered, would revive it without an operator (a late notify run
// waiting over a dead-lettered notify, a fetch restarting the review of
// a version whose llm stage was dead-lettered since). The other terminal
// statuses stay movable by their own stage: notify keeps working a job it
// holds needs_intervention, fetch restarts a no_recipients review.
// ErrConflict when the condition fails.
func (s *Jobs) SetStatus(ctx context.Context, id job.ID, at job.Stage, status job.Status, w store.JobWrite) error {
	now := ts(s.now())
	upd := jobWriteUpdate(sweepJobFor(expression.Set(expression.Name("status"), expression.Value(string(status))).
		Set(expression.Name("updated_at"), expression.Value(now)), status), w)
	cond := expression.Name("stage").Equal(expression.Value(string(at))).
		And(expression.Name("status").NotEqual(expression.Value(string(job.StatusSucceeded)))).
		And(expression.Name("status").NotEqual(expression.Value(string(job.StatusDeadLettered))))
	return s.update(ctx, id, upd, &cond)
}

// RecordFailure stores a stage failure: its class and attempt, and the
// status it leaves the job in, and returns when the stage first failed
// (kept across attempts for the dead-letter envelope's first_failure_at,
// R-STAGE-4). It never moves a succeeded job backwards.
func (s *Jobs) RecordFailure(ctx context.Context, id job.ID, f job.Failure, status job.Status) (time.Time, error) {
	fav, err := marshal(stored[failureRecord](f))
	if err != nil {
		return time.Time{}, err
	}
	firstAttr := "first_failure_at_" + string(f.Stage)
	// An UpdateBuilder shares its operations with its copies, so each
	// variant is built afresh.
	build := func(withStatus bool) expression.UpdateBuilder {
		upd := expression.Set(expression.Name("attempts."+string(f.Stage)), expression.Value(f.Attempt)).
			Set(expression.Name("updated_at"), expression.Value(ts(s.now()))).
			Set(expression.Name("last_error"), expression.Value(&types.AttributeValueMemberM{Value: fav})).
			Set(expression.Name(firstAttr), expression.IfNotExists(expression.Name(firstAttr), expression.Value(ts(f.At))))
		if status == job.StatusDeadLettered {
			upd = upd.Set(expression.Name("dead_letter"), expression.Value(&types.AttributeValueMemberM{Value: fav}))
		}
		if withStatus {
			upd = sweepJobFor(upd.Set(expression.Name("status"), expression.Value(string(status))), status)
		}
		return upd
	}
	upd := build(true)
	cond := expression.AttributeExists(expression.Name("pk")).
		And(expression.Name("status").NotEqual(expression.Value(string(job.StatusSucceeded))))
	if status == job.StatusRetryableFailed {
		// A job held for an operator (a delivery held for provider
		// evidence) stays needs_intervention while its stage retries.
		cond = cond.And(expression.Name("status").NotEqual(expression.Value(string(job.StatusNeedsIntervention))))
	}
	attrs, err := conditionalUpdate(ctx, s.db, s.table, jobKey(id), upd, cond, types.ReturnValueUpdatedNew)
	if errors.Is(err, store.ErrConflict) && status == job.StatusRetryableFailed {
		// The failure is recorded all the same; the status is kept.
		upd = build(false)
		cond = expression.AttributeExists(expression.Name("pk")).
			And(expression.Name("status").Equal(expression.Value(string(job.StatusNeedsIntervention))))
		attrs, err = conditionalUpdate(ctx, s.db, s.table, jobKey(id), upd, cond, types.ReturnValueUpdatedNew)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("record failure on job %s: %w", id, err)
	}
	var first time.Time
	if v, ok := attrs[firstAttr].(*types.AttributeValueMemberS); ok {
		first, _ = time.Parse(time.RFC3339Nano, v.Value)
	}
	return first, nil
}

func (s *Jobs) update(ctx context.Context, id job.ID, upd expression.UpdateBuilder, cond *expression.ConditionBuilder) error {
	c := expression.AttributeExists(expression.Name("pk"))
	if cond != nil {
		c = *cond
	}
	if _, err := conditionalUpdate(ctx, s.db, s.table, jobKey(id), upd, c, types.ReturnValueNone); err != nil {
		return fmt.Errorf("update job %s: %w", id, err)
	}
	return nil
}

// StuckJobs calls fn for every job in job.Unfinished not updated since
// before: its stage has not moved. It reads the live index (index.go): the
// keys of the unfinished jobs updated before the bound, not the table's
// history; then those jobs whole, strongly consistent (batchGet), each
// checked as it is now (a job that moved on since the index saw it is left
// alone). The index is eventually consistent; a sweep that misses a job by
// a moment finds it at the next run.
func (s *Jobs) StuckJobs(ctx context.Context, before time.Time, fn func(job.Job) error) error {
	e, err := expression.NewBuilder().WithKeyCondition(expression.Key(schema.Sweep).Equal(expression.Value(sweepJob)).
		And(expression.Key("updated_at").LessThan(expression.Value(ts(before))))).Build()
	if err != nil {
		return fmt.Errorf("build stuck-jobs query: %w", err)
	}
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{TableName: &s.table, IndexName: aws.String(schema.IndexLiveJobs),
		KeyConditionExpression: e.KeyCondition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("query stuck jobs: %w", err)
		}
		keys := make([]map[string]types.AttributeValue, 0, len(out.Items))
		for _, item := range out.Items {
			keys = append(keys, map[string]types.AttributeValue{"pk": item["pk"]})
		}
		var stuck []job.Job
		if err := batchGet(ctx, s.db, s.table, keys, func(item map[string]types.AttributeValue) error {
			var it jobItem
			if err := unmarshal(item, &it); err != nil {
				return err
			}
			if !it.Status.Terminal() && it.UpdatedAt.Before(before) {
				stuck = append(stuck, it.asJob())
			}
			return nil
		}); err != nil {
			return fmt.Errorf("read stuck jobs: %w", err)
		}
		for _, j := range stuck {
			if err := fn(j); err != nil {
				return err
			}
		}
	}
	return nil
}

var _ store.Jobs = (*Jobs)(nil)
