package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/vote"
)

// Learnings is the in-memory store.Learnings.
type Learnings struct {
	mu    sync.Mutex
	repos map[string]map[string]*learnRule // repository key -> rule -> tally
}

type learnRule struct {
	wrong, useful map[string]bool
	state         vote.LearningState
	decided       time.Time
}

// NewLearnings returns an empty learnings store.
func NewLearnings() *Learnings { return &Learnings{repos: map[string]map[string]*learnRule{}} }

// Tally implements store.Learnings.Tally, with its bounds.
func (s *Learnings) Tally(_ context.Context, t vote.Tally) (vote.TallyOutcome, error) {
	if t.Repository == "" || t.Rule == "" || t.Reader == "" || !t.Choice.Valid() {
		return "", fmt.Errorf("tally %+v: incomplete", t)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rules := s.repos[t.Repository]
	if rules == nil {
		rules = map[string]*learnRule{}
		s.repos[t.Repository] = rules
	}
	r := rules[t.Rule]
	if r == nil {
		if len(rules) >= vote.MaxLearnRules {
			return vote.TallyFull, nil
		}
		r = &learnRule{wrong: map[string]bool{}, useful: map[string]bool{}}
	}
	in, out := r.wrong, r.useful
	if t.Choice == vote.Useful {
		in, out = out, in
	}
	if !in[t.Reader] && len(in) >= vote.MaxLearnReaders {
		return vote.TallyFull, nil
	}
	in[t.Reader] = true
	delete(out, t.Reader)
	rules[t.Rule] = r
	return vote.TallyCounted, nil
}

func (s *Learnings) view(repo, rule string, r *learnRule) vote.Learning {
	return vote.Learning{ID: vote.LearningID(repo, rule), Repository: repo, Rule: rule,
		Wrong: len(r.wrong), Useful: len(r.useful), State: r.state, DecidedAt: r.decided}
}

// List implements store.Learnings.List, by repository and rule.
func (s *Learnings) List(context.Context) ([]vote.Learning, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []vote.Learning
	for repo, rules := range s.repos {
		for rule, r := range rules {
			out = append(out, s.view(repo, rule, r))
		}
	}
	slices.SortFunc(out, func(a, b vote.Learning) int {
		return cmp.Or(cmp.Compare(a.Repository, b.Repository), cmp.Compare(a.Rule, b.Rule))
	})
	return out, nil
}

func (s *Learnings) find(id string) (string, string, *learnRule) {
	for repo, rules := range s.repos {
		for rule, r := range rules {
			if vote.LearningID(repo, rule) == id {
				return repo, rule, r
			}
		}
	}
	return "", "", nil
}

// Get implements store.Learnings.Get.
func (s *Learnings) Get(_ context.Context, id string) (vote.Learning, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, rule, r := s.find(id)
	if r == nil {
		return vote.Learning{}, fmt.Errorf("learning %s: %w", id, store.ErrNotFound)
	}
	return s.view(repo, rule, r), nil
}

// Decide implements store.Learnings.Decide.
func (s *Learnings) Decide(_ context.Context, id string, st vote.LearningState, at time.Time) (vote.Learning, error) {
	if st != vote.Accepted && st != vote.Rejected {
		return vote.Learning{}, fmt.Errorf("decide %s: state %q is not a decision", id, st)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, rule, r := s.find(id)
	switch {
	case r == nil:
		return vote.Learning{}, fmt.Errorf("learning %s: %w", id, store.ErrNotFound)
	case r.state != "":
		return vote.Learning{}, fmt.Errorf("decide learning %s: %w", id, store.ErrConflict)
	}
	r.state, r.decided = st, at.UTC()
	return s.view(repo, rule, r), nil
}

// Accepted implements store.Learnings.Accepted.
func (s *Learnings) Accepted(_ context.Context, repoKey string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for rule, r := range s.repos[repoKey] {
		if r.state == vote.Accepted {
			out = append(out, rule)
		}
	}
	slices.Sort(out)
	return out, nil
}
