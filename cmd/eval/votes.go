package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/criticizer/criticizer/internal/awsclient/profile"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic/eval"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/vote"
)

// reportVotes prints readers' votes per rule (R-VOTE-2) from "table" (the
// deployment's or make run's jobs table, configured from the environment
// as the functions are) or from a JSON file of votes; from "" prints
// nothing. save, when set, keeps the votes read as such a file, so a
// deployment's votes can be reported again without AWS credentials.
func reportVotes(ctx context.Context, w io.Writer, from, save string) error {
	if from == "" {
		return nil
	}
	var votes []vote.Vote
	if from == "table" {
		cfg, err := config.FromEnv(os.Getenv)
		if err != nil {
			return err
		}
		if cfg.JobsTable == "" {
			return fmt.Errorf("-votes table: set %s", config.EnvJobsTable)
		}
		awsCfg, err := profile.Load(ctx, cfg.Endpoints)
		if err != nil {
			return err
		}
		if votes, err = dynamo.NewVotes(dynamo.NewClient(awsCfg, cfg.Endpoints.DynamoDB), cfg.JobsTable, nil).List(ctx); err != nil {
			return err
		}
	} else {
		b, err := os.ReadFile(from)
		if err != nil {
			return fmt.Errorf("votes: %w", err)
		}
		if err := json.Unmarshal(b, &votes); err != nil {
			return fmt.Errorf("votes %s: %w", from, err)
		}
	}
	if save != "" {
		b, err := json.MarshalIndent(votes, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(save, append(b, '\n'), 0o600); err != nil {
			return fmt.Errorf("save votes: %w", err)
		}
	}
	fmt.Fprintf(w, "%d votes from %s (docs/eval.md#readers-votes)\n\n", len(votes), from)
	eval.PrintVotes(w, from, eval.TallyVotes(votes))
	return nil
}
