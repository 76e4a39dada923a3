package instructions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/blob"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/retry"
)

// DefaultTTL is how long a Source keeps what it read: a change to the
// object reaches the reviews within it, and a busy llm function reads the
// object about once per TTL per execution environment.
const DefaultTTL = 5 * time.Minute

// Getter reads an object of the payload bucket (blob.Store).
type Getter interface {
	Get(ctx context.Context, ref string, limit int64) ([]byte, error)
}

// Source is the instructions as the object holds them, read at most once
// per TTL. Without the object, they are Fallback (the environment's). A
// read that fails keeps the last instructions read, and is tried again at
// the next call; with none read yet, the error is the review's, and the
// stage runner retries it. An object that does not parse is a permanent
// error (SCHEMA_INVALID): every review would fail the same way until an
// operator fixes it, and the dead letter says so.
type Source struct {
	Get      Getter
	Fallback Set
	TTL      time.Duration
	Now      func() time.Time

	mu   sync.Mutex
	set  Set
	at   time.Time
	read bool
}

// Current is the instructions for the review about to run.
func (s *Source) Current(ctx context.Context) (Set, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if s.read && now().Sub(s.at) < ttl {
		return s.set, nil
	}
	b, err := s.Get.Get(ctx, config.ReviewInstructionsKey, MaxBytes)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		s.set = s.Fallback
	case err != nil && s.read:
		return s.set, nil
	case err != nil:
		return Set{}, fmt.Errorf("reading the review instructions: %w", err)
	default:
		set, err := Parse(b)
		if err != nil {
			return Set{}, retry.Permanent(retry.SchemaInvalid, err)
		}
		s.set = set
	}
	s.at, s.read = now(), true
	return s.set, nil
}
