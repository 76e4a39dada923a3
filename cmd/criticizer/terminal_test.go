package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/ops"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/termtext"
	"github.com/criticizer/criticizer/internal/testenv"
)

// What others wrote reaches the operator's terminal escaped: a reviewer's
// username noted by a webhook (ESC sequences, C1, bidi) and an operator
// name with an ESC, printed by `directory list` as text and as JSON, come
// out with no raw control or bidi character, the JSON still reading back
// as the stored text; and the error of a command quoting its argument is
// escaped too.
// Rules: R-TERM-1.
func TestCLI_OutputEscapesControlAndBidi(t *testing.T) {
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	ctx := context.Background()
	dir := dynamo.NewDirectory(env.Clients.DynamoDB, res.JobsTable, time.Now)
	evil := "octo\x1b]8;;https://evil.example\x07cat\u0085\u202eexe.txt\u2066\x1b[2J"
	if err := dir.NoteUnknown(ctx, "github", []string{evil}); err != nil {
		t.Fatal(err)
	}
	if _, err := dir.Set(ctx, "github", "hubot", "hubot@example.com", "ops\x1b[31m\u200fred"); err != nil {
		t.Fatal(err)
	}
	reach := func(context.Context, bool, string) (*ops.Ops, error) {
		return &ops.Ops{Directory: dir, Now: time.Now}, nil
	}
	for _, args := range [][]string{{"directory", "list", "--source", "github"}, {"--json", "directory", "list", "--source", "github"}} {
		var out bytes.Buffer
		if err := dispatch(ctx, args, &out, reach); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		got := out.String()
		for _, r := range got {
			if termtext.Unsafe(r) && r != '\n' {
				t.Fatalf("%q printed a raw U+%04X:\n%q", args, r, got)
			}
		}
		if !strings.Contains(got, `\u001b]8;;`) || !strings.Contains(got, `\u202eexe.txt`) || !strings.Contains(got, `ops\u001b[31m`) {
			t.Errorf("%q: the characters are not shown escaped:\n%s", args, got)
		}
		if args[0] == "--json" {
			var back []struct{ Unknown []string }
			if err := json.Unmarshal(out.Bytes(), &back); err != nil || len(back) != 1 || len(back[0].Unknown) != 1 ||
				!strings.HasPrefix(back[0].Unknown[0], "octo\x1b]8;;") {
				t.Errorf("the JSON does not read back as the stored text: %v %+v", err, back)
			}
		}
	}
}
