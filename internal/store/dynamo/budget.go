package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// Budgets keeps each window as one item holding the set of job ids that
// ran in it, expiring (TTL) a window after it ends. A spend is one
// TransactWriteItems of an ADD per window, each on condition that the job
// is in the set already or the set has room: every window or none, the
// same job counted once however often its stage is retried, and
// concurrent spends never pass the limit.
type Budgets struct {
	db    *dynamodb.Client
	table string
	now   store.Clock
}

var _ store.Budgets = (*Budgets)(nil)

// NewBudgets returns the budgets on the jobs table.
func NewBudgets(db *dynamodb.Client, table string, now store.Clock) *Budgets {
	if now == nil {
		now = time.Now
	}
	return &Budgets{db: db, table: table, now: now}
}

func budgetPK(w store.BudgetWindow, at time.Time) string {
	return schema.PrefixBudget + w.Name + "#" + w.Key + "#" + strconv.FormatInt(store.WindowStart(w, at).Unix(), 10)
}

// Spend implements Budgets.
func (s *Budgets) Spend(ctx context.Context, sp store.Spend) (store.SpendResult, error) {
	var items []types.TransactWriteItem
	var windows []store.BudgetWindow
	for _, w := range sp.Windows {
		if w.Limit <= 0 || w.Every <= 0 {
			continue
		}
		expires := store.WindowStart(w, sp.At).Add(2 * w.Every).Unix()
		e, err := expression.NewBuilder().
			WithUpdate(expression.Add(expression.Name("jobs"), expression.Value(&types.AttributeValueMemberSS{Value: []string{string(sp.JobID)}})).
				Set(expression.Name("kind"), expression.Value("budget")).
				Set(expression.Name("expires_at"), expression.Value(expires))).
			WithCondition(expression.AttributeNotExists(expression.Name("jobs")).
				Or(expression.Contains(expression.Name("jobs"), string(sp.JobID))).
				Or(expression.Size(expression.Name("jobs")).LessThan(expression.Value(w.Limit)))).
			Build()
		if err != nil {
			return store.SpendResult{}, fmt.Errorf("build budget update: %w", err)
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{TableName: &s.table,
			Key:              map[string]types.AttributeValue{"pk": str(budgetPK(w, sp.At))},
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}})
		windows = append(windows, w)
	}
	if len(items) == 0 {
		return store.SpendResult{OK: true}, nil
	}
	input := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	// Concurrent spends on one window cancel each other
	// (TransactionConflict): the loser tries again as a new transaction.
	for attempt := 0; ; attempt++ {
		var err error
		if input.ClientRequestToken, err = txToken(); err != nil {
			return store.SpendResult{}, err
		}
		_, err = s.db.TransactWriteItems(ctx, input)
		if err == nil {
			return store.SpendResult{OK: true}, nil
		}
		var canceled *types.TransactionCanceledException
		if !errors.As(err, &canceled) {
			return store.SpendResult{}, fmt.Errorf("spend the model-run budget of %s: %w", sp.JobID, err)
		}
		conflict := false
		for i, r := range canceled.CancellationReasons {
			if r.Code == nil || i >= len(windows) {
				continue
			}
			switch *r.Code {
			case "ConditionalCheckFailed":
				used := 0
				if ss, ok := r.Item["jobs"].(*types.AttributeValueMemberSS); ok {
					used = len(ss.Value)
				}
				return store.SpendResult{Refused: windows[i].Name, Used: used, Limit: windows[i].Limit}, nil
			case "TransactionConflict":
				conflict = true
			}
		}
		if !conflict || attempt >= 12 {
			return store.SpendResult{}, fmt.Errorf("spend the model-run budget of %s: %w", sp.JobID, err)
		}
		select {
		case <-ctx.Done():
			return store.SpendResult{}, ctx.Err()
		case <-time.After(time.Duration(5*(attempt+1)) * time.Millisecond):
		}
	}
}
