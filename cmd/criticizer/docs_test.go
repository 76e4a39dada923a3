package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/docs"
	"github.com/criticizer/criticizer/internal/ops"
)

// errReached stands for AWS: a command that gets this far had a known
// verb, known flags and the arguments it wants.
var errReached = errors.New("reached the deployment")

// cliArgs returns the CLI's arguments of a command the docs show, as
// `go run ./cmd/criticizer …` or `criticizer …`.
func cliArgs(argv []string) ([]string, bool) {
	switch {
	case len(argv) >= 3 && argv[0] == "go" && argv[1] == "run" && argv[2] == "./cmd/criticizer":
		return argv[3:], true
	case len(argv) >= 1 && argv[0] == "criticizer":
		return argv[1:], true
	}
	return nil, false
}

// Every criticizer command README.md and docs/ show is one the CLI
// accepts as written: each runs through the CLI up to the point where it
// would reach AWS. A command in a shell block must get there (or print
// the help); one quoted in prose may leave out its arguments
// (`criticizer jobs show`), but its verb must exist.
func TestDocs_EveryCommandParses(t *testing.T) {
	noAWS(t)
	root, err := docs.Root()
	if err != nil {
		t.Fatal(err)
	}
	pages, err := docs.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	reach := func(context.Context, bool, string) (*ops.Ops, error) { return nil, errReached }
	// A file a command reads (`directory import directory.json`) is the
	// operator's: here it is a seed in the form configuration.md gives.
	dir := t.TempDir()
	t.Chdir(dir)
	blocks := 0
	for _, p := range pages {
		for _, c := range p.Commands("criticizer", "go") {
			argv, err := c.Argv()
			if err != nil {
				t.Errorf("%s:%d: %v", c.Page, c.Line, err)
				continue
			}
			args, ok := cliArgs(argv)
			if !ok {
				continue
			}
			for _, a := range args {
				if strings.HasSuffix(a, ".json") && !strings.HasPrefix(a, "-") {
					if err := os.WriteFile(filepath.Join(dir, a), []byte(`{"github":{"octocat":"octocat@example.com"}}`), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			err = dispatch(context.Background(), args, io.Discard, reach)
			var ue usageError
			switch {
			case err == nil, errors.Is(err, errReached):
			case c.Inline && errors.As(err, &ue) && !strings.HasPrefix(ue.msg, "unknown command"):
				// A verb quoted without its arguments.
			case c.Inline && errors.As(err, &ue) && len(args) == 1 && groupExists(args[0]):
				// A command group: `criticizer directory`.
			default:
				t.Errorf("%s:%d: %q: %v", c.Page, c.Line, c.Text, err)
			}
			if !c.Inline {
				blocks++
			}
		}
	}
	if blocks < 10 {
		t.Fatalf("only %d criticizer commands in shell blocks: the reader is broken", blocks)
	}
}

func groupExists(g string) bool {
	for _, c := range commands {
		if c.group == g {
			return true
		}
	}
	return false
}

// The test above fails on what it should: an unknown verb, an unknown
// flag, a missing argument.
func TestDocs_EveryCommandParses_CatchesBadCommands(t *testing.T) {
	noAWS(t)
	reach := func(context.Context, bool, string) (*ops.Ops, error) { return nil, errReached }
	for _, args := range [][]string{
		{"--local", "dlq", "purge"},
		{"--local", "dlq", "replay", "x", "--note", "n", "--force"},
		{"--local", "deliveries", "resolve", "x"},
		{"--local", "directory", "set", "github", "octocat"},
	} {
		if err := dispatch(context.Background(), args, io.Discard, reach); errors.Is(err, errReached) || err == nil {
			t.Errorf("%q reached AWS; want a usage error", args)
		}
	}
	if err := dispatch(context.Background(), []string{"--local", "dlq", "list"}, io.Discard, reach); !errors.Is(err, errReached) {
		t.Errorf("dlq list: %v, want it to reach AWS", err)
	}
}
