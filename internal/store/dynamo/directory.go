package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Directory is the reviewer directory people keep (reviewers.Overlay puts
// it over the static seed), in the jobs table:
//
//	DIR#<source>#<lower-case username>   an entry (email), or a removal
//	UNKNOWN#<source>                     usernames reviewers were asked by
//	                                     and no entry resolved
//
// Entries never expire. Lookups read the entries by key (BatchGetItem,
// strongly consistent), so an entry set a moment ago counts for the next
// delivery. Listing reads the sparse index schema.IndexDirectory, which holds the
// entries and nothing else.
type Directory struct {
	db    *dynamodb.Client
	table string
	now   store.Clock
}

// NewDirectory returns the directory on the jobs table.
func NewDirectory(db *dynamodb.Client, table string, now store.Clock) *Directory {
	if now == nil {
		now = time.Now
	}
	return &Directory{db: db, table: table, now: now}
}

var _ reviewers.EntryReader = (*Directory)(nil)

type directoryItem struct {
	PK   string `dynamodbav:"pk"`
	Kind string `dynamodbav:"kind"`
	// Index keys (schema.IndexDirectory): the source, and the username's key.
	IndexSource string    `dynamodbav:"directory"`
	IndexUser   string    `dynamodbav:"directory_user"`
	Username    string    `dynamodbav:"username"`
	Email       string    `dynamodbav:"email,omitempty"`
	Removed     bool      `dynamodbav:"removed,omitempty"`
	UpdatedAt   time.Time `dynamodbav:"updated_at"`
	UpdatedBy   string    `dynamodbav:"updated_by,omitempty"`
}

func directoryKey(source, username string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixDirectory + source + "#" + reviewers.Key(username))}
}

func (it directoryItem) entry() reviewers.Entry {
	return reviewers.Entry{Source: it.IndexSource, Username: it.Username, Email: it.Email, Removed: it.Removed,
		UpdatedAt: it.UpdatedAt, UpdatedBy: it.UpdatedBy}
}

// Set maps a username of a source to an address (already checked with
// reviewers.CheckAddress), replacing any entry or removal, and takes the
// username off the source's unknown list.
func (d *Directory) Set(ctx context.Context, source, username, email, by string) (reviewers.Entry, error) {
	e, _, err := d.put(ctx, directoryItem{Username: username, IndexSource: source, Email: email, UpdatedBy: by})
	return e, err
}

// Remove records that a username has no address: a removal, which also
// hides an entry of the static seed. It reports whether an entry with an
// address was there (the item the write replaced).
func (d *Directory) Remove(ctx context.Context, source, username, by string) (bool, error) {
	_, old, err := d.put(ctx, directoryItem{Username: username, IndexSource: source, Removed: true, UpdatedBy: by})
	return err == nil && old != nil && !old.Removed && old.Email != "", err
}

// put writes an entry (or a removal) in one PutItem and returns it, with
// the item it replaced (ALL_OLD; nil when there was none).
func (d *Directory) put(ctx context.Context, it directoryItem) (reviewers.Entry, *reviewers.Entry, error) {
	key := reviewers.Key(it.Username)
	if it.IndexSource == "" || key == "" {
		return reviewers.Entry{}, nil, fmt.Errorf("directory: source and username are required")
	}
	it.PK, it.Kind, it.IndexUser, it.UpdatedAt = schema.PrefixDirectory+it.IndexSource+"#"+key, "directory", key, d.now().UTC()
	item, err := marshal(it)
	if err != nil {
		return reviewers.Entry{}, nil, err
	}
	out, err := d.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &d.table, Item: item, ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		return reviewers.Entry{}, nil, fmt.Errorf("directory: write entry: %w", err)
	}
	var old *reviewers.Entry
	if len(out.Attributes) > 0 {
		var was directoryItem
		if err := unmarshal(out.Attributes, &was); err != nil {
			return reviewers.Entry{}, nil, err
		}
		e := was.entry()
		old = &e
	}
	if !it.Removed {
		if err := d.forgetUnknown(ctx, it.IndexSource, key); err != nil {
			return reviewers.Entry{}, nil, err
		}
	}
	return it.entry(), old, nil
}

func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// Get reads one entry (or removal), or ErrNotFound.
func (d *Directory) Get(ctx context.Context, source, username string) (reviewers.Entry, error) {
	out, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.table, Key: directoryKey(source, username), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return reviewers.Entry{}, fmt.Errorf("directory: get entry: %w", err)
	}
	if len(out.Item) == 0 {
		return reviewers.Entry{}, fmt.Errorf("directory entry %s:%s: %w", source, reviewers.Key(username), store.ErrNotFound)
	}
	var it directoryItem
	if err := unmarshal(out.Item, &it); err != nil {
		return reviewers.Entry{}, err
	}
	return it.entry(), nil
}

// Entries implements reviewers.EntryReader: the entries and removals of
// the usernames, by reviewers.Key, in one BatchGetItem per 100 names.
func (d *Directory) Entries(ctx context.Context, source string, usernames []string) (map[string]reviewers.Entry, error) {
	out := map[string]reviewers.Entry{}
	var keys []string
	for _, u := range usernames {
		if k := reviewers.Key(u); k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	batch := make([]map[string]types.AttributeValue, len(keys))
	for i, k := range keys {
		batch[i] = directoryKey(source, k)
	}
	if err := batchGet(ctx, d.db, d.table, batch, func(item map[string]types.AttributeValue) error {
		var it directoryItem
		if err := unmarshal(item, &it); err != nil {
			return err
		}
		out[it.IndexUser] = it.entry()
		return nil
	}); err != nil {
		return nil, fmt.Errorf("directory: look up entries: %w", err)
	}
	return out, nil
}

// List returns a source's entries and removals, by username, from the
// sparse index.
func (d *Directory) List(ctx context.Context, source string) ([]reviewers.Entry, error) {
	e, err := expression.NewBuilder().WithKeyCondition(expression.Key("directory").Equal(expression.Value(source))).Build()
	if err != nil {
		return nil, fmt.Errorf("directory: build query: %w", err)
	}
	p := dynamodb.NewQueryPaginator(d.db, &dynamodb.QueryInput{TableName: &d.table, IndexName: aws.String(schema.IndexDirectory),
		KeyConditionExpression: e.KeyCondition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()})
	out := []reviewers.Entry{}
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("directory: list %s: %w", source, err)
		}
		for _, item := range page.Items {
			var it directoryItem
			if err := unmarshal(item, &it); err != nil {
				return nil, err
			}
			out = append(out, it.entry())
		}
	}
	return out, nil
}

func unknownKey(source string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixUnknown + source)}
}

// NoteUnknown records usernames of a source that reviewers were asked by
// and no entry resolved (ADD to a set: repeats and concurrent writers
// change nothing), for an operator to add.
func (d *Directory) NoteUnknown(ctx context.Context, source string, usernames []string) error {
	var keys []string
	for _, u := range usernames {
		if k := reviewers.Key(u); k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	_, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &d.table, Key: unknownKey(source),
		UpdateExpression: aws.String("ADD usernames :u SET kind = :k, updated_at = :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": &types.AttributeValueMemberSS{Value: keys}, ":k": str("unknown_reviewers"), ":now": str(ts(d.now())),
		}})
	if err != nil {
		return fmt.Errorf("directory: note unknown reviewers: %w", err)
	}
	return nil
}

// Unknown lists a source's usernames that no entry resolved, sorted.
func (d *Directory) Unknown(ctx context.Context, source string) ([]string, error) {
	out, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.table, Key: unknownKey(source), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("directory: read unknown reviewers: %w", err)
	}
	var it struct {
		Usernames []string `dynamodbav:"usernames,stringset"`
	}
	if err := unmarshal(out.Item, &it); err != nil {
		return nil, err
	}
	slices.Sort(it.Usernames)
	if it.Usernames == nil {
		it.Usernames = []string{}
	}
	return it.Usernames, nil
}

func (d *Directory) forgetUnknown(ctx context.Context, source, key string) error {
	_, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &d.table, Key: unknownKey(source),
		UpdateExpression:          aws.String("DELETE usernames :u"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": &types.AttributeValueMemberSS{Value: []string{key}}}})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("directory: forget an unknown reviewer: %w", err)
	}
	return nil
}

var _ store.Directory = (*Directory)(nil)
