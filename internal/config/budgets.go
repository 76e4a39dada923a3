package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The settings that bound what one changelist, one author or one replayed
// webhook can make the system spend (R-BUDGET-1, R-BUDGET-2,
// R-REVIEWERS-5, R-REVIEWERS-6).
const (
	EnvModelRunsPerChangelistHour = "CRITICIZER_MODEL_RUNS_PER_CHANGELIST_HOUR"
	EnvModelRunsPerAuthorDay      = "CRITICIZER_MODEL_RUNS_PER_AUTHOR_DAY"
	EnvMaxTeamMembers             = "CRITICIZER_MAX_TEAM_MEMBERS"
	EnvReviewerReplayWindow       = "CRITICIZER_REVIEWER_REPLAY_WINDOW"
	EnvReviewerRefreshWindow      = "CRITICIZER_REVIEWER_REFRESH_WINDOW"
)

// The defaults: a changelist pushed more than six times in an hour, or an
// author reviewed more than forty times a day, is far past what a person
// reads; a team of more than 25 is an organization, not a reviewer.
const (
	DefaultModelRunsPerChangelistHour = 6
	DefaultModelRunsPerAuthorDay      = 40
	DefaultMaxTeamMembers             = 25
	DefaultReviewerReplayWindow       = 24 * time.Hour
	DefaultReviewerRefreshWindow      = 10 * time.Second
)

// Budgets are those bounds. A zero limit turns its budget off.
type Budgets struct {
	// ModelRunsPerChangelistHour and ModelRunsPerAuthorDay bound the
	// llm stage's model runs (R-BUDGET-1).
	ModelRunsPerChangelistHour int
	ModelRunsPerAuthorDay      int
	// MaxTeamMembers caps the members of one requested team who are
	// mailed (R-REVIEWERS-6).
	MaxTeamMembers int
	// ReviewerReplayWindow is how long a reviewer webhook's delivery id
	// is remembered; ReviewerRefreshWindow how long reviewer events for
	// one version are gathered into one refresh (R-BUDGET-3).
	ReviewerReplayWindow  time.Duration
	ReviewerRefreshWindow time.Duration
}

// readBudgets reads the Budgets settings.
func (c *Config) readBudgets(getenv func(string) string) error {
	b := Budgets{}
	var err error
	if b.ModelRunsPerChangelistHour, err = count(getenv, EnvModelRunsPerChangelistHour, DefaultModelRunsPerChangelistHour); err != nil {
		return err
	}
	if b.ModelRunsPerAuthorDay, err = count(getenv, EnvModelRunsPerAuthorDay, DefaultModelRunsPerAuthorDay); err != nil {
		return err
	}
	if b.MaxTeamMembers, err = count(getenv, EnvMaxTeamMembers, DefaultMaxTeamMembers); err != nil {
		return err
	}
	if b.ReviewerReplayWindow, err = duration(getenv, EnvReviewerReplayWindow, DefaultReviewerReplayWindow); err != nil {
		return err
	}
	if b.ReviewerRefreshWindow, err = duration(getenv, EnvReviewerRefreshWindow, DefaultReviewerRefreshWindow); err != nil {
		return err
	}
	if b.ReviewerRefreshWindow > 15*time.Minute {
		return fmt.Errorf("%s: at most 15m (SQS's longest delay), got %s", EnvReviewerRefreshWindow, b.ReviewerRefreshWindow)
	}
	c.Budgets = b
	return nil
}

// count reads a non-negative whole number; 0 turns its limit off.
func count(getenv func(string) string, name string, def int) (int, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 100000 {
		return 0, fmt.Errorf("%s: want a whole number from 0 (off) to 100000, got %q", name, v)
	}
	return n, nil
}
