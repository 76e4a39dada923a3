package llm

import (
	"context"
	"sync"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/instructions"
)

// Instructed is the model's critic with the deployment's current
// instructions: before each review it asks Source for them (read from the
// payload bucket at most once per TTL) and reviews with the critic Build
// made for them, made again only when they change. A change of
// instructions changes the critic's fingerprint, so the next version of
// each changelist is reviewed in full (R-LEDGER-3).
type Instructed struct {
	Source *instructions.Source
	Build  func(instructions.Set) critic.Critic

	mu     sync.Mutex
	set    instructions.Set
	critic critic.Critic
}

// Review implements critic.Critic.
func (i *Instructed) Review(ctx context.Context, in critic.Input) (critic.Critique, error) {
	set, err := i.Source.Current(ctx)
	if err != nil {
		return critic.Critique{}, err
	}
	return i.criticFor(set).Review(ctx, in)
}

func (i *Instructed) criticFor(set instructions.Set) critic.Critic {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.critic == nil || !set.Equal(i.set) {
		i.set, i.critic = set, i.Build(set)
	}
	return i.critic
}
