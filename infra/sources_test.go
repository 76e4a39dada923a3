package main

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestSourcesMatchRoot: the stack routes exactly the webhook sources the
// root module has (job.Sources, parsed from internal/job/source.go: infra
// is its own module and cannot import it).
func TestSourcesMatchRoot(t *testing.T) {
	path := filepath.Join("..", "internal", "job", "source.go")
	root := returnedList(t, path, "Sources", stringConsts(t, path))
	if !slices.Equal(Sources, root) {
		t.Errorf("infra's Sources %v are not job.Sources() %v", Sources, root)
	}
}
