package storetest

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// SameDiffer keeps the versions of a changelist per diff content
// (store.Jobs.SameDiff, R-QUIET-1).
type SameDiffer interface {
	SameDiff(ctx context.Context, changelistKey, diffSHA string, version int) ([]int, error)
}

// SameDiff runs the diff-versions suite against the store open returns:
// each call records its version and answers every version recorded with
// that content; a repeat records nothing twice; concurrent versions all
// stay; another content or another changelist is apart.
func SameDiff(t *testing.T, open func(t *testing.T) SameDiffer) {
	ctx := context.Background()
	s := open(t)
	call := func(cl, sha string, v int) []int {
		t.Helper()
		got, err := s.SameDiff(ctx, cl, sha, v)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := call("generic:cl", "aaa", 2); !slices.Equal(got, []int{2}) {
		t.Fatalf("first version: %v, want [2]", got)
	}
	if got := call("generic:cl", "bbb", 3); !slices.Equal(got, []int{3}) {
		t.Fatalf("another content: %v, want [3]", got)
	}
	if got := call("generic:cl", "aaa", 4); !slices.Equal(got, []int{2, 4}) {
		t.Fatalf("same content again: %v, want [2 4]", got)
	}
	if got := call("generic:cl", "aaa", 4); !slices.Equal(got, []int{2, 4}) {
		t.Fatalf("a repeat: %v, want [2 4]", got)
	}
	if got := call("generic:other", "aaa", 1); !slices.Equal(got, []int{1}) {
		t.Fatalf("another changelist: %v, want [1]", got)
	}
	var wg sync.WaitGroup
	for v := 10; v < 20; v++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.SameDiff(ctx, "generic:cl", "ccc", v); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := call("generic:cl", "ccc", 20); len(got) != 11 || got[0] != 10 || got[10] != 20 {
		t.Fatalf("after concurrent versions: %v, want 10..20", got)
	}
}
