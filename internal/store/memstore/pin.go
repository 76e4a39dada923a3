package memstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// PinBase implements store.Jobs: the first base recorded is kept.
func (s *Jobs) PinBase(_ context.Context, id job.ID, sha string) (string, error) {
	if strings.TrimSpace(sha) == "" {
		return "", fmt.Errorf("pin the base of %s: no commit given", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ref, ok := s.refs[id]
	if !ok {
		return "", fmt.Errorf("source reference of %s: %w", id, store.ErrNotFound)
	}
	if ref.BaseSHA == "" {
		ref.BaseSHA = sha
		s.refs[id] = ref
	}
	return ref.BaseSHA, nil
}
