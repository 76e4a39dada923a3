package dynamo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
	"github.com/criticizer/criticizer/internal/vote"
)

// Learnings implements Learnings on the jobs table: one item per
// repository, LEARN#<repository digest>, holding its rules (a set, at
// most vote.MaxLearnRules), per rule the readers who chose wrong and
// useful (sets of opaque ids, at most vote.MaxLearnReaders each), its
// decision, and the set of accepted rules the llm stage reads with one
// GetItem. A learning is a promise kept to the team: no TTL.
type Learnings struct {
	db    *dynamodb.Client
	table string
	now   store.Clock
}

// NewLearnings returns the learnings repository on the jobs table.
func NewLearnings(db *dynamodb.Client, jobsTable string, now store.Clock) *Learnings {
	if now == nil {
		now = time.Now
	}
	return &Learnings{db: db, table: jobsTable, now: now}
}

// The attributes of a repository's item: fixed ones, and per rule the
// name prefixes below followed by the rule.
const (
	attrLearnRepository = "repository"
	attrLearnRules      = "rules"
	attrLearnAccepted   = "accepted"
	learnWrong          = "w#"
	learnUseful         = "u#"
	learnState          = "s#"
	learnDecided        = "d#"
)

func learnPK(repoDigest string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{schema.JobsKey: str(schema.PrefixLearning + repoDigest)}
}

func stringSet(v string) types.AttributeValue {
	return &types.AttributeValueMemberSS{Value: []string{v}}
}

// Tally is one conditional UpdateItem: the reader goes into the chosen
// set and out of the other, the rule into the repository's rules, under
// the bounds. Votes on one rule from many readers at once each land: set
// additions commute.
func (s *Learnings) Tally(ctx context.Context, t vote.Tally) (vote.TallyOutcome, error) {
	if t.Repository == "" || t.Rule == "" || t.Reader == "" || !t.Choice.Valid() {
		return "", fmt.Errorf("tally %+v: incomplete", t)
	}
	in, out := learnWrong+t.Rule, learnUseful+t.Rule
	if t.Choice == vote.Useful {
		in, out = out, in
	}
	upd := expression.Add(expression.Name(attrLearnRules), expression.Value(stringSet(t.Rule))).
		Add(expression.Name(in), expression.Value(stringSet(t.Reader))).
		Delete(expression.Name(out), expression.Value(stringSet(t.Reader))).
		Set(expression.Name("kind"), expression.Value("learning")).
		Set(expression.Name(attrLearnRepository), expression.Value(t.Repository)).
		Set(expression.Name("updated_at"), expression.Value(ts(t.At)))
	cond := expression.AttributeNotExists(expression.Name(in)).
		Or(expression.Contains(expression.Name(in), t.Reader)).
		Or(expression.Size(expression.Name(in)).LessThan(expression.Value(vote.MaxLearnReaders))).
		And(expression.AttributeNotExists(expression.Name(attrLearnRules)).
			Or(expression.Contains(expression.Name(attrLearnRules), t.Rule)).
			Or(expression.Size(expression.Name(attrLearnRules)).LessThan(expression.Value(vote.MaxLearnRules))))
	_, err := conditionalUpdate(ctx, s.db, s.table, learnPK(vote.RepoDigest(t.Repository)), upd, cond, types.ReturnValueNone)
	switch {
	case errors.Is(err, store.ErrConflict):
		return vote.TallyFull, nil
	case err != nil:
		return "", fmt.Errorf("tally a vote on %s: %w", t.Rule, err)
	}
	return vote.TallyCounted, nil
}

// List scans the jobs table for LEARN# items. It reads (and bills) the
// whole table: it is the operator's (criticizer learnings list, GET
// /admin/learnings), never on a review's path.
func (s *Learnings) List(ctx context.Context) ([]vote.Learning, error) {
	e, err := expression.NewBuilder().WithFilter(expression.Name(schema.JobsKey).BeginsWith(schema.PrefixLearning)).Build()
	if err != nil {
		return nil, fmt.Errorf("build filter: %w", err)
	}
	p := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{TableName: aws.String(s.table), FilterExpression: e.Filter(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(), ConsistentRead: aws.Bool(true)})
	var out []vote.Learning
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan learnings: %w", err)
		}
		for _, item := range page.Items {
			out = append(out, learningsOf(item)...)
		}
	}
	sortLearnings(out)
	return out, nil
}

// sortLearnings orders learnings by repository, then rule.
func sortLearnings(ls []vote.Learning) {
	slices.SortFunc(ls, func(a, b vote.Learning) int {
		return cmp.Or(cmp.Compare(a.Repository, b.Repository), cmp.Compare(a.Rule, b.Rule))
	})
}

// learningsOf reads a repository's item into its learnings.
func learningsOf(item map[string]types.AttributeValue) []vote.Learning {
	sv := func(name string) string {
		if v, ok := item[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	ss := func(name string) []string {
		if v, ok := item[name].(*types.AttributeValueMemberSS); ok {
			return v.Value
		}
		return nil
	}
	repo := sv(attrLearnRepository)
	var out []vote.Learning
	for _, rule := range ss(attrLearnRules) {
		l := vote.Learning{ID: vote.LearningID(repo, rule), Repository: repo, Rule: rule,
			Wrong: len(ss(learnWrong + rule)), Useful: len(ss(learnUseful + rule)), State: vote.LearningState(sv(learnState + rule))}
		if at, err := time.Parse(timeLayout, sv(learnDecided+rule)); err == nil {
			l.DecidedAt = at
		}
		out = append(out, l)
	}
	sortLearnings(out)
	return out
}

// Get reads the learning's repository item (strongly consistent) and
// finds the rule the id names among its rules.
func (s *Learnings) Get(ctx context.Context, id string) (vote.Learning, error) {
	repo, ok := vote.SplitLearningID(id)
	if !ok {
		return vote.Learning{}, fmt.Errorf("learning %q: %w", id, store.ErrNotFound)
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: learnPK(repo), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return vote.Learning{}, fmt.Errorf("read learning %s: %w", id, err)
	}
	for _, l := range learningsOf(out.Item) {
		if l.ID == id {
			return l, nil
		}
	}
	return vote.Learning{}, fmt.Errorf("learning %s: %w", id, store.ErrNotFound)
}

// Decide is one conditional UpdateItem on the repository's item: the
// rule must be tallied and undecided, so two operators deciding at once
// decide once (the loser gets ErrConflict).
func (s *Learnings) Decide(ctx context.Context, id string, st vote.LearningState, at time.Time) (vote.Learning, error) {
	if st != vote.Accepted && st != vote.Rejected {
		return vote.Learning{}, fmt.Errorf("decide %s: state %q is not a decision", id, st)
	}
	l, err := s.Get(ctx, id)
	if err != nil {
		return vote.Learning{}, err
	}
	upd := expression.Set(expression.Name(learnState+l.Rule), expression.Value(string(st))).
		Set(expression.Name(learnDecided+l.Rule), expression.Value(ts(at)))
	if st == vote.Accepted {
		upd = upd.Add(expression.Name(attrLearnAccepted), expression.Value(stringSet(l.Rule)))
	}
	cond := expression.Contains(expression.Name(attrLearnRules), l.Rule).
		And(expression.AttributeNotExists(expression.Name(learnState + l.Rule)))
	if _, err := conditionalUpdate(ctx, s.db, s.table, learnPK(vote.RepoDigest(l.Repository)), upd, cond, types.ReturnValueNone); err != nil {
		return vote.Learning{}, fmt.Errorf("decide learning %s: %w", id, err)
	}
	l.State, l.DecidedAt = st, at.UTC()
	return l, nil
}

// Accepted reads the repository's accepted rules: one GetItem of one
// attribute, on every review of the repository.
func (s *Learnings) Accepted(ctx context.Context, repoKey string) ([]string, error) {
	if repoKey == "" {
		return nil, nil
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: learnPK(vote.RepoDigest(repoKey)),
		ProjectionExpression: aws.String("#a, #r"), ExpressionAttributeNames: map[string]string{"#a": attrLearnAccepted, "#r": attrLearnRepository}})
	if err != nil {
		return nil, fmt.Errorf("read the learnings of %s: %w", repoKey, err)
	}
	// Another repository's item under the same digest (a collision of 80
	// bits) teaches this one nothing.
	if r, ok := out.Item[attrLearnRepository].(*types.AttributeValueMemberS); !ok || r.Value != repoKey {
		return nil, nil
	}
	v, _ := out.Item[attrLearnAccepted].(*types.AttributeValueMemberSS)
	if v == nil {
		return nil, nil
	}
	rules := slices.Clone(v.Value)
	slices.Sort(rules)
	return slices.DeleteFunc(rules, func(r string) bool { return strings.TrimSpace(r) == "" }), nil
}
