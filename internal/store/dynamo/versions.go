package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Code review systems (GitHub, GitLab, Gerrit) add three more kinds of item
// to the jobs table:
//
//	VSEQ#<source>:<changelist>          the changelist's version counter
//	                                    (last_version, and head_sha: the
//	                                    head it was last drawn for)
//	SHA#<source>:<changelist>#<sha>     a head commit: its review version
//	                                    and its place in the code host's
//	                                    order (heads.go, R-SOURCE-6)
//	SRC#<job_id>                        the job's source reference: where
//	                                    fetch finds the diff and reviewers
//
// and two attributes to a job item, written by the fetch stage in the same
// Advance as the diff reference: recipients (the resolved addresses, the
// job's existing field) and attrNoEmailReviewers.

// attrNoEmailReviewers (jobwrite.go) lists the reviewers the fetch
// stage could not resolve to an address, as "<source>:<username>"
// identities. Each becomes a skipped_no_email delivery row.

// versionItem is what is known of a head commit (HeadRecord): its review
// version, or, for a head known only as the `before` of a versioned one,
// none (review_version absent, order behind).
type versionItem struct {
	PK            string          `dynamodbav:"pk"`
	Kind          string          `dynamodbav:"kind"`
	Source        string          `dynamodbav:"source"`
	ChangelistID  string          `dynamodbav:"changelist_id"`
	HeadSHA       string          `dynamodbav:"head_sha"`
	ReviewVersion int             `dynamodbav:"review_version,omitempty"`
	Order         store.HeadOrder `dynamodbav:"order,omitempty"`
	After         string          `dynamodbav:"after_sha,omitempty"`
	BehindVersion int             `dynamodbav:"behind_version,omitempty"`
	CreatedAt     time.Time       `dynamodbav:"created_at"`
}

func (it versionItem) record() store.HeadRecord {
	return store.HeadRecord{SHA: it.HeadSHA, Version: it.ReviewVersion, Order: it.Order, After: it.After, BehindVersion: it.BehindVersion,
		PlacedAt: it.CreatedAt}
}

// counterItem is a changelist's version counter: the last version drawn,
// and the head PlaceHead drew it for.
type counterItem struct {
	LastVersion int    `dynamodbav:"last_version"`
	HeadSHA     string `dynamodbav:"head_sha"`
}

func versionPK(source, changelistID, headSHA string) string {
	return schema.PrefixHeadSHA + job.ChangelistKey(source, changelistID) + "#" + headSHA
}

func counterPK(source, changelistID string) string {
	return schema.PrefixVersionSeq + job.ChangelistKey(source, changelistID)
}

// AssignVersion places a head commit its event says nothing more of
// (store.AssignVersionOf): the same commit always gets the same version;
// a new one the next version, pending the code host's word.
func (s *Jobs) AssignVersion(ctx context.Context, source, changelistID, headSHA string) (int, error) {
	return store.AssignVersionOf(ctx, s, source, changelistID, headSHA)
}

// maxPlaceAttempts bounds PlaceHead's retries of a lost race: each loss
// means another head of the changelist was placed meanwhile.
const maxPlaceAttempts = 16

// PlaceHead implements Heads (R-SOURCE-6). It reads the head's item, the
// changelist's counter and the item of the event's before, decides
// (decidePlacement), and draws a version in one TransactWriteItems: the
// counter moves to the next version and the head on condition that it
// still holds the last version read (attribute_not_exists on the first),
// the head's item is put on condition that it has no version, and an
// unknown before is marked behind on condition that nothing is known of
// it. A transaction cancelled for any reason lost a race to another
// placement (or a rerun, which draws from the same counter): PlaceHead
// reads again and decides again, so the numbering follows the order the
// decisions were made in, each against the state the one before it left.
// Each attempt has a token of its own (txToken, R-STORE-2).
func (s *Jobs) PlaceHead(ctx context.Context, ev store.HeadEvent) (store.Placement, error) {
	if err := store.CheckHeadEvent(ev); err != nil {
		return store.Placement{}, err
	}
	for attempt := 0; ; attempt++ {
		self, err := s.headItem(ctx, ev.Source, ev.ChangelistID, ev.HeadSHA)
		if err != nil {
			return store.Placement{}, err
		}
		if self != nil && self.Version > 0 {
			return store.Placement{Version: self.Version, Pending: self.Order == store.HeadPending, PlacedAt: self.PlacedAt}, nil
		}
		c, err := s.counter(ctx, ev.Source, ev.ChangelistID)
		if err != nil {
			return store.Placement{}, err
		}
		var before *store.HeadRecord
		if ev.BeforeSHA != "" {
			if before, err = s.headItem(ctx, ev.Source, ev.ChangelistID, ev.BeforeSHA); err != nil {
				return store.Placement{}, err
			}
		}
		d := store.DecidePlacement(ev, self, c, before)
		if d.Stale {
			return store.Placement{Stale: true, Current: d.Current}, nil
		}
		v, now := c.Last+1, s.now().UTC()
		input, err := s.drawInput(ev, c, d, v, now, self != nil)
		if err != nil {
			return store.Placement{}, err
		}
		if input.ClientRequestToken, err = txToken(); err != nil {
			return store.Placement{}, fmt.Errorf("place head: %w", err)
		}
		_, err = s.db.TransactWriteItems(ctx, input)
		if err == nil {
			return store.Placement{Version: v, Pending: d.Order == store.HeadPending, PlacedAt: now}, nil
		}
		var canceled *types.TransactionCanceledException
		if !errors.As(err, &canceled) {
			return store.Placement{}, fmt.Errorf("place head %s of %s: %w", ev.HeadSHA, ev.ChangelistID, err)
		}
		if attempt+1 >= maxPlaceAttempts {
			return store.Placement{}, fmt.Errorf("place head %s of %s: lost %d races: %w", ev.HeadSHA, ev.ChangelistID, maxPlaceAttempts, err)
		}
		select {
		case <-ctx.Done():
			return store.Placement{}, ctx.Err()
		case <-time.After(time.Duration(5*(attempt+1)) * time.Millisecond):
		}
	}
}

// drawInput is the transaction that draws version v for ev's head. Each
// item's condition is what PlaceHead read of it: the reads are not one
// snapshot, so a head read as unknown may have been marked behind since
// (its before came in another event), and the counter read after it
// already shows that other draw.
func (s *Jobs) drawInput(ev store.HeadEvent, c store.CounterState, d store.Draw, v int, at time.Time, marked bool) (*dynamodb.TransactWriteItemsInput, error) {
	now := ts(at)
	cond := "attribute_not_exists(pk)"
	values := map[string]types.AttributeValue{":n": num(v), ":h": str(ev.HeadSHA), ":kind": str("version_counter"), ":now": str(now)}
	if c.Exists {
		cond = "last_version = :last"
		values[":last"] = num(c.Last)
	}
	head, err := marshal(versionItem{PK: versionPK(ev.Source, ev.ChangelistID, ev.HeadSHA), Kind: "version", Source: ev.Source,
		ChangelistID: ev.ChangelistID, HeadSHA: ev.HeadSHA, ReviewVersion: v, Order: d.Order, After: d.After, CreatedAt: at})
	if err != nil {
		return nil, err
	}
	// A head read as unknown must still be; a head read as a mark (a
	// head known only as a before, no version) is replaced only by a
	// push that follows the newest (DecidePlacement), and only while it
	// has no version.
	headCond := "attribute_not_exists(pk)"
	if marked {
		headCond = "attribute_not_exists(review_version)"
	}
	items := []types.TransactWriteItem{
		{Update: &types.Update{TableName: &s.table, Key: map[string]types.AttributeValue{"pk": str(counterPK(ev.Source, ev.ChangelistID))},
			UpdateExpression:    aws.String("SET last_version = :n, head_sha = :h, kind = :kind, updated_at = :now"),
			ConditionExpression: aws.String(cond), ExpressionAttributeValues: values}},
		{Put: &types.Put{TableName: &s.table, Item: head, ConditionExpression: aws.String(headCond)}},
	}
	if d.Mark != "" {
		mark, err := marshal(versionItem{PK: versionPK(ev.Source, ev.ChangelistID, d.Mark), Kind: "version", Source: ev.Source,
			ChangelistID: ev.ChangelistID, HeadSHA: d.Mark, Order: store.HeadBehind, BehindVersion: v, CreatedAt: at})
		if err != nil {
			return nil, err
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: mark,
			ConditionExpression: aws.String("attribute_not_exists(pk)")}})
	}
	return &dynamodb.TransactWriteItemsInput{TransactItems: items}, nil
}

func num(n int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(n)} }

// headItem reads a head's item; nil when there is none.
func (s *Jobs) headItem(ctx context.Context, source, changelistID, sha string) (*store.HeadRecord, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": str(versionPK(source, changelistID, sha))}})
	if err != nil {
		return nil, fmt.Errorf("get head commit %s: %w", sha, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	var it versionItem
	if err := unmarshal(out.Item, &it); err != nil {
		return nil, err
	}
	r := it.record()
	return &r, nil
}

// counter reads a changelist's version counter.
func (s *Jobs) counter(ctx context.Context, source, changelistID string) (store.CounterState, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": str(counterPK(source, changelistID))}})
	if err != nil {
		return store.CounterState{}, fmt.Errorf("get the version counter: %w", err)
	}
	if len(out.Item) == 0 {
		return store.CounterState{}, nil
	}
	var it counterItem
	if err := unmarshal(out.Item, &it); err != nil {
		return store.CounterState{}, err
	}
	return store.CounterState{Exists: true, Last: it.LastVersion, Head: it.HeadSHA}, nil
}

// Head implements Heads.
func (s *Jobs) Head(ctx context.Context, source, changelistID, sha string) (store.HeadRecord, error) {
	r, err := s.headItem(ctx, source, changelistID, sha)
	if err != nil {
		return store.HeadRecord{}, err
	}
	if r == nil {
		return store.HeadRecord{}, fmt.Errorf("head commit %s of %s: %w", sha, changelistID, store.ErrNotFound)
	}
	return *r, nil
}

// SettleHead implements Heads: one conditional write, from pending only;
// a head already settled (a retry whose answer was lost, or another
// fetch) comes back as it stands.
func (s *Jobs) SettleHead(ctx context.Context, source, changelistID, sha string, order store.HeadOrder) (store.HeadRecord, error) {
	if order != store.HeadOrdered && order != store.HeadBehind {
		return store.HeadRecord{}, fmt.Errorf("settle head %s: %q is not a verdict", sha, order)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.table,
		Key:                                 map[string]types.AttributeValue{"pk": str(versionPK(source, changelistID, sha))},
		UpdateExpression:                    aws.String("SET #o = :v"),
		ConditionExpression:                 aws.String("#o = :pending"),
		ExpressionAttributeNames:            map[string]string{"#o": "order"},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":v": str(string(order)), ":pending": str(string(store.HeadPending))},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	item := map[string]types.AttributeValue(nil)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		item = ccf.Item
		if len(item) == 0 {
			// Nothing there, or an emulator that does not return it.
			return s.Head(ctx, source, changelistID, sha)
		}
	case err != nil:
		return store.HeadRecord{}, fmt.Errorf("settle head commit %s: %w", sha, err)
	default:
		item = out.Attributes
	}
	var it versionItem
	if err := unmarshal(item, &it); err != nil {
		return store.HeadRecord{}, err
	}
	return it.record(), nil
}

var _ store.Heads = (*Jobs)(nil)

type sourceRefItem struct {
	PK    string `dynamodbav:"pk"`
	Kind  string `dynamodbav:"kind"`
	JobID job.ID `dynamodbav:"job_id"`
	sourceRefRecord
	CreatedAt string `dynamodbav:"created_at"`
}

func sourceRefKey(id job.ID) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixSourceRef + string(id))}
}

// PutSourceRef records a job's source reference unless it already has one:
// the first delivery's is kept. For a given job id (source, changelist,
// version) the reference names the same commit whichever delivery wrote it.
func (s *Jobs) PutSourceRef(ctx context.Context, id job.ID, ref store.SourceRef) error {
	if ref.Reviewers == nil {
		ref.Reviewers = []string{}
	}
	item, err := marshal(sourceRefItem{PK: schema.PrefixSourceRef + string(id), Kind: "source_ref", JobID: id, sourceRefRecord: stored[sourceRefRecord](ref), CreatedAt: ts(s.now())})
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
func (s *Jobs) GetSourceRef(ctx context.Context, id job.ID) (store.SourceRef, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: sourceRefKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return store.SourceRef{}, fmt.Errorf("get source reference of %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return store.SourceRef{}, fmt.Errorf("source reference of %s: %w", id, store.ErrNotFound)
	}
	var it sourceRefItem
	if err := unmarshal(out.Item, &it); err != nil {
		return store.SourceRef{}, err
	}
	return stored[store.SourceRef](it.sourceRefRecord), nil
}

// NoEmailReviewers reads a job's reviewers without an address, as
// "<source>:<username>" identities: those its fetch found
// (attrNoEmailReviewers), then those added since (attrAddedNoEmail,
// sorted), each once. A job without either (every generic job, any job
// before fetch) has none.
func (s *Jobs) NoEmailReviewers(ctx context.Context, id job.ID) ([]string, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: jobKey(id), ConsistentRead: aws.Bool(true),
		ProjectionExpression:     aws.String("#n, #a"),
		ExpressionAttributeNames: map[string]string{"#n": attrNoEmailReviewers, "#a": attrAddedNoEmail}})
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
	return store.UnionSorted(it.Identities, it.Added), nil
}
