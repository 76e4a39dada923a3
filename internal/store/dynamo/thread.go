package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Every email about a changelist to a recipient keeps the subject of the
// first (R-THREAD-1): Gmail and Outlook group a conversation by its
// subject, so a subject that followed an edited title would start another.
// The title the subject names is kept on the changelist head
// (CL#<changelist key>), attribute attrThreadTitle:
//
//   - Create sets it in the head update it makes anyway, with
//     if_not_exists: the changelist's first accepted version names it,
//     and later versions leave it, at no extra call;
//   - heads never expire, so it outlives the TTL of the jobs and rows it
//     came from;
//   - a head written before the attribute existed has none until the
//     next Create sets it (that version's title: a Create cannot tell an
//     old head from a new one without a read); a notify that gets there
//     first derives it from the earliest version still known and keeps it
//     with KeepThreadTitle (if_not_exists again). Either way it is set
//     once, and every later version agrees. Those conversations had a
//     subject following the title before, so either choice continues one
//     of their threads.
//
// Kept per changelist rather than per recipient: every recipient's
// conversation gets the same subject, so a recipient added at a later
// version also keeps the subject of their own first email, with no
// write per recipient.

// attrThreadTitle is the changelist head's attribute holding the title
// its conversation is named by.
const attrThreadTitle = "thread_title"

func headKey(source, changelistID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(schema.PrefixChangelist + job.ChangelistKey(source, changelistID))}
}

// ThreadTitle returns the title the changelist's conversation is named
// by, or "" when its head keeps none (or it has no head). The read is
// eventually consistent: the attribute is written once, and a read that
// misses it only sends the caller to KeepThreadTitle, which finds it.
func (s *Jobs) ThreadTitle(ctx context.Context, source, changelistID string) (string, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: headKey(source, changelistID),
		ProjectionExpression: aws.String(attrThreadTitle)})
	if err != nil {
		return "", fmt.Errorf("get thread title: %w", err)
	}
	t, _ := out.Item[attrThreadTitle].(*types.AttributeValueMemberS)
	if t == nil {
		return "", nil
	}
	return t.Value, nil
}

// KeepThreadTitle sets the changelist head's thread title to title unless
// it has one, and returns the one it has afterwards. ErrNotFound: the
// changelist has no head; nothing is written.
func (s *Jobs) KeepThreadTitle(ctx context.Context, source, changelistID, title string) (string, error) {
	upd := expression.Set(expression.Name(attrThreadTitle), expression.IfNotExists(expression.Name(attrThreadTitle), expression.Value(title)))
	attrs, err := conditionalUpdate(ctx, s.db, s.table, headKey(source, changelistID), upd,
		expression.AttributeExists(expression.Name("pk")), types.ReturnValueUpdatedNew)
	if errors.Is(err, store.ErrConflict) {
		return "", fmt.Errorf("changelist %s: %w", changelistID, store.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("keep thread title: %w", err)
	}
	t, _ := attrs[attrThreadTitle].(*types.AttributeValueMemberS)
	if t == nil {
		return "", fmt.Errorf("keep thread title: %s not returned", attrThreadTitle)
	}
	return t.Value, nil
}
