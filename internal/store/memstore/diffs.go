package memstore

import (
	"context"
	"slices"
)

// SameDiff is store.Jobs.SameDiff: the versions of a changelist recorded
// with one diff content, this one added.
func (s *Jobs) SameDiff(_ context.Context, changelistKey, diffSHA string, version int) ([]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.diffs == nil {
		s.diffs = map[string][]int{}
	}
	k := changelistKey + "#" + diffSHA
	if !slices.Contains(s.diffs[k], version) {
		s.diffs[k] = append(s.diffs[k], version)
		slices.Sort(s.diffs[k])
	}
	return slices.Clone(s.diffs[k]), nil
}
