package eval

import (
	"bytes"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/vote"
)

// make eval reports readers' votes per rule: each vote once, useful and
// wrong apart, the most voted rule first.
// Rules: R-VOTE-2.
func TestTallyVotes_PerRule(t *testing.T) {
	v := func(rule string, c vote.Choice) vote.Vote { return vote.Vote{Rule: rule, Choice: c} }
	got := TallyVotes([]vote.Vote{v("todo-added", vote.Wrong), v("sql-injection", vote.Useful), v("sql-injection", vote.Useful),
		v("sql-injection", vote.Wrong), v("todo-added", vote.Wrong)})
	want := []RuleVotes{{Rule: "sql-injection", Useful: 2, Wrong: 1}, {Rule: "todo-added", Wrong: 2}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("tally %+v, want %+v", got, want)
	}
	var b bytes.Buffer
	PrintVotes(&b, "table", got)
	for _, line := range []string{"sql-injection  2       1      67", "todo-added     0       2      0", "total          2       3      40"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("report lacks %q:\n%s", line, b.String())
		}
	}
}
