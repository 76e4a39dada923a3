package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/prefs"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

var _ store.Preferences = (*Preferences)(nil)

// prefItem is PREF#<recipient id>. "repositories" is the muted set (the
// name it had when only the one-click unsubscribe wrote it; an attribute
// name never changes once shipped, or records already kept are lost).
// digest_hour is a pointer because 0 is an hour: a record without one
// (written before it existed, or by an unsubscribe only) has the default.
type prefItem struct {
	PK              string   `dynamodbav:"pk"`
	UnsubscribedAll bool     `dynamodbav:"unsubscribed_all"`
	Muted           []string `dynamodbav:"repositories,stringset,omitempty"`
	Mode            string   `dynamodbav:"mode,omitempty"`
	DigestHour      *int     `dynamodbav:"digest_hour,omitempty"`
	TimeZone        string   `dynamodbav:"time_zone,omitempty"`
	MinSeverity     string   `dynamodbav:"min_severity,omitempty"`
	Rev             int      `dynamodbav:"rev,omitempty"`
	UpdatedAt       string   `dynamodbav:"updated_at,omitempty"`
}

func (it prefItem) preferences() prefs.Preferences {
	p := prefs.Preferences{Mode: prefs.Mode(it.Mode), DigestHour: prefs.DefaultDigestHour, TimeZone: it.TimeZone,
		MinSeverity: it.MinSeverity, Muted: it.Muted, UnsubscribedAll: it.UnsubscribedAll, Rev: it.Rev}
	if it.DigestHour != nil {
		p.DigestHour = *it.DigestHour
	}
	if t, err := time.Parse(timeLayout, it.UpdatedAt); err == nil {
		p.UpdatedAt = t
	}
	return p.Normalized()
}

// Preferences implements Preferences.Preferences: one strongly
// consistent GetItem.
func (r *Preferences) Preferences(ctx context.Context, recipientID string) (prefs.Preferences, error) {
	out, err := r.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &r.table, Key: prefKey(recipientID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return prefs.Preferences{}, fmt.Errorf("get preferences: %w", err)
	}
	if len(out.Item) == 0 {
		return prefs.Default().Normalized(), nil
	}
	var it prefItem
	if err := unmarshal(out.Item, &it); err != nil {
		return prefs.Preferences{}, err
	}
	return it.preferences(), nil
}

// SavePreferences implements Preferences.SavePreferences: one
// UpdateItem that sets every field and moves rev on, on condition that
// rev is still p.Rev. An UpdateItem, not a PutItem: attributes this
// version does not know (a later one's) are kept.
func (r *Preferences) SavePreferences(ctx context.Context, recipientID string, p prefs.Preferences) (prefs.Preferences, error) {
	p = p.Normalized()
	if err := p.Validate(); err != nil {
		return prefs.Preferences{}, err
	}
	now := r.now().UTC()
	upd := expression.Set(expression.Name("kind"), expression.Value("preference")).
		Set(expression.Name("unsubscribed_all"), expression.Value(p.UnsubscribedAll)).
		Set(expression.Name("mode"), expression.Value(string(p.Mode))).
		Set(expression.Name("digest_hour"), expression.Value(p.DigestHour)).
		Set(expression.Name("time_zone"), expression.Value(p.TimeZone)).
		Set(expression.Name("updated_at"), expression.Value(ts(now))).
		Set(expression.Name("rev"), expression.Value(p.Rev+1))
	if p.MinSeverity == prefs.SeverityNone {
		upd = upd.Remove(expression.Name("min_severity"))
	} else {
		upd = upd.Set(expression.Name("min_severity"), expression.Value(p.MinSeverity))
	}
	if len(p.Muted) == 0 {
		upd = upd.Remove(expression.Name("repositories")) // a set cannot be empty
	} else {
		upd = upd.Set(expression.Name("repositories"), expression.Value(&types.AttributeValueMemberSS{Value: p.Muted}))
	}
	cond := expression.AttributeNotExists(expression.Name("rev"))
	if p.Rev > 0 {
		cond = expression.Name("rev").Equal(expression.Value(p.Rev))
	}
	e, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return prefs.Preferences{}, fmt.Errorf("build update: %w", err)
	}
	_, err = r.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &r.table, Key: prefKey(recipientID),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return prefs.Preferences{}, fmt.Errorf("save preferences at rev %d: %w", p.Rev, store.ErrConflict)
	}
	if err != nil {
		return prefs.Preferences{}, fmt.Errorf("save preferences: %w", err)
	}
	p.Rev, p.UpdatedAt = p.Rev+1, now
	return p, nil
}

// Mute implements Preferences.Mute: one UpdateItem that ADDs the
// repository to the set (a repeat adds nothing) on condition the set has
// room or holds it already; a full set leaves every email instead. Every
// write moves rev on, so a page saved from what was read before it fails
// its condition rather than undo it.
func (r *Preferences) Mute(ctx context.Context, recipientID, repository string) error {
	if repository == "" || len(repository) > prefs.MaxRepository {
		return fmt.Errorf("mute: a repository of %d bytes, want 1 to %d", len(repository), prefs.MaxRepository)
	}
	set := expression.Name("repositories")
	upd := expression.Set(expression.Name("kind"), expression.Value("preference")).
		Set(expression.Name("updated_at"), expression.Value(ts(r.now()))).
		Add(set, expression.Value(&types.AttributeValueMemberSS{Value: []string{repository}})).
		Add(expression.Name("rev"), expression.Value(1))
	cond := expression.AttributeNotExists(set).
		Or(set.Size().LessThan(expression.Value(prefs.MaxMuted))).
		Or(expression.Contains(set, repository))
	e, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("build update: %w", err)
	}
	_, err = r.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &r.table, Key: prefKey(recipientID),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return r.UnsubscribeAll(ctx, recipientID)
	}
	if err != nil {
		return fmt.Errorf("update %s: %w", r.table, err)
	}
	return nil
}

// UnsubscribeAll implements Preferences.UnsubscribeAll: SET to true
// (a repeat changes nothing but rev).
func (r *Preferences) UnsubscribeAll(ctx context.Context, recipientID string) error {
	upd := expression.Set(expression.Name("kind"), expression.Value("preference")).
		Set(expression.Name("updated_at"), expression.Value(ts(r.now()))).
		Set(expression.Name("unsubscribed_all"), expression.Value(true)).
		Add(expression.Name("rev"), expression.Value(1))
	return r.update(ctx, prefKey(recipientID), upd)
}

// mergeStanding folds one PREF# or SUPP# item into the standings.
func mergeStanding(out map[string]delivery.Standing, item map[string]types.AttributeValue) error {
	var head struct {
		PK     string `dynamodbav:"pk"`
		Reason string `dynamodbav:"reason"`
	}
	if err := unmarshal(item, &head); err != nil {
		return err
	}
	if id, ok := strings.CutPrefix(head.PK, schema.PrefixPreference); ok {
		var it prefItem
		if err := unmarshal(item, &it); err != nil {
			return err
		}
		s := out[id]
		s.Preferences = it.preferences()
		out[id] = s
	} else if id, ok := strings.CutPrefix(head.PK, schema.PrefixSuppression); ok {
		s := out[id]
		s.Suppressed, s.Reason = true, head.Reason
		out[id] = s
	}
	return nil
}
