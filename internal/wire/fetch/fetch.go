// Package fetch builds the fetch stage: it reads a changelist's diff and
// reviewers from its code review system (or a diff_url) into S3.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/criticizer/criticizer/internal/blob"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/retry"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/safehttp"
	"github.com/criticizer/criticizer/internal/secrets"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/stage"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/wire"
)

// New builds the fetch stage's SQS handler.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, o wire.Options) (*stage.Runner, error) {
	b, err := wire.NewBase(ctx, cfg, log, o)
	if err != nil {
		return nil, err
	}
	if cfg, err = secrets.Apply(ctx, b.AWS, cfg); err != nil {
		return nil, err
	}
	f := &pipeline.Fetch{
		Base: pipeline.Base{Posts: cfg.Channels, Jobs: b.Jobs, Blobs: blob.New(blob.NewS3(b.AWS, cfg.Endpoints.S3), cfg.PayloadBucket),
			Queue: b.Queue, Log: log, Now: b.Now},
		HTTP:   safehttp.NewClient(safehttp.Policy{AllowPrivate: cfg.AllowPrivateDiffs, Ports: cfg.DiffURLPorts}, 20*time.Second),
		Source: Sources(cfg, b.Now),
		// A requested team mails at most this many members (R-REVIEWERS-6).
		MaxTeamMembers: cfg.Budgets.MaxTeamMembers,
		// Files the deployment calls generated need no read of their base
		// (R-CRITIC-7).
		GeneratedPaths: cfg.GeneratedPaths,
		// A head intake placed pending is ordered here (R-SOURCE-6).
		Heads: b.Jobs,
	}
	if cfg.LLM.Critic != config.CriticOffline {
		// The code around each hunk, read at the head for a model; the
		// offline critic reads the diff alone (R-CONTEXT-1).
		f.ContextFileBytes = cfg.ContextFileBytes
	}
	seed, err := Directory(cfg)
	if err != nil {
		return nil, err
	}
	// The table people keep (admin API, criticizer directory), over the
	// variable's entries as a read-only seed.
	table := dynamo.NewDirectory(b.DynamoDB, cfg.JobsTable, b.Now)
	f.Directory = reviewers.Overlay{Table: table, Seed: seed}
	f.Unknown = table
	rosters := dynamo.NewRosters(b.DynamoDB, cfg.JobsTable, b.Now)
	rosters.Retention = cfg.Retention
	f.Rosters = rosters
	// A fetch message needs at least one source request's time, the
	// repository's settings file's, and the reads of files, at the base
	// and at the head (R-STAGE-9, R-REPO-1, R-CRITIC-7, R-CONTEXT-2).
	o.Runner = append([]stage.Option{stage.WithMessageTime(MessageTime)}, o.Runner...)
	return b.Runner(job.StageFetch, f.Handle, o)
}

// MessageTime is how long one fetch message may take (R-STAGE-9): a
// source request's timeout for the diff and reviewers, one for the
// repository's settings file, and one that bounds every read of files
// together: their base versions' first lines and the changed files at
// the head (R-CONTEXT-2), which get what the first leave. A head whose place waits on its code host
// (R-SOURCE-6, rare: an event that did not say what it follows) is
// compared first, within one more source.FileRequestTimeout, and its
// version is then most often skipped, with nothing else asked: the
// allowance is not raised for it, which would cut every batch to one
// message; a message that overruns is cut by its calls' own timeouts.
const MessageTime = source.RequestTimeout + 2*source.FileRequestTimeout

// Directory parses the reviewer directory's seed
// (CRITICIZER_REVIEWER_DIRECTORY); nil when none is configured. An error
// names the variable, never a value.
func Directory(cfg config.Config) (*reviewers.Static, error) {
	if cfg.ReviewerDirectory == "" {
		return nil, nil
	}
	d, err := reviewers.ParseStatic([]byte(cfg.ReviewerDirectory))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.EnvReviewerDirectory, err)
	}
	return d, nil
}

// Sources builds the fetchers of the code review systems. They do not
// depend on the webhook credentials (the fetch function need not hold
// them): GitHub and GitLab always have one (public API roots by default),
// Gerrit once its server's URL is set. A job only exists for a source
// intake routed.
func Sources(cfg config.Config, now func() time.Time) source.Router {
	r := source.Router{
		"github": GitHub(cfg, now),
		"gitlab": &source.GitLab{BaseURL: cfg.GitLab.APIURL, Token: cfg.GitLab.Token, MaxDiffBytes: pipeline.MaxDiffBytes, Now: now},
		"gerrit": unconfigured{fmt.Sprintf("%s is not set: the fetch stage cannot reach the Gerrit server", config.EnvGerritAPIURL)},
	}
	if cfg.Gerrit.APIURL != "" {
		r["gerrit"] = &source.Gerrit{BaseURL: cfg.Gerrit.APIURL, Username: cfg.Gerrit.Username, Password: cfg.Gerrit.Password,
			MaxDiffBytes: pipeline.MaxDiffBytes, Now: now}
	}
	return r
}

// unconfigured is the fetcher of a source missing its settings: every
// fetch fails permanently (dead-lettered at once), saying what to set.
type unconfigured struct{ why string }

func (u unconfigured) Fetch(context.Context, source.Ref) (source.Changelist, error) {
	return source.Changelist{}, retry.Permanent(retry.RuntimeBug, errors.New(u.why))
}

func (u unconfigured) Reviewers(context.Context, source.Ref) (source.Reviewers, error) {
	return source.Reviewers{}, retry.Permanent(retry.RuntimeBug, errors.New(u.why))
}
