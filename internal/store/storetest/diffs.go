package storetest

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/criticizer/criticizer/internal/store"
)

// sameDiff runs the diff-versions cases (store.Jobs.SameDiff,
// R-QUIET-1) on s: each call records its version and answers every
// version recorded with that content; a repeat records nothing twice;
// concurrent versions all stay; another content or another changelist
// is apart.
func sameDiff(t *testing.T, s store.Jobs) {
	ctx := context.Background()
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
