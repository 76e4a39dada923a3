package config

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// EnvGeneratedPaths lists the deployment's globs of generated and vendored
// files (R-CRITIC-7), as a JSON array of doublestar patterns from the
// repository root: a file one matches is left out of the review as
// generated, whatever the change says. Without it, a file counts as
// generated or vendored only when its base already was (its name, or the
// "Code generated … DO NOT EDIT." marker in its first lines): a name or
// a marker the change wrote is reviewed.
const EnvGeneratedPaths = "CRITICIZER_GENERATED_PATHS"

// Bounds on EnvGeneratedPaths, as a repository's ignore globs have.
const (
	maxGeneratedPaths     = 100
	maxGeneratedPathRunes = 200
)

// readGeneratedPaths reads EnvGeneratedPaths. A JSON array rather than a
// comma-separated list: a glob may hold commas ({a,b}). An error names
// the variable and the bad glob's position, never its text.
func (c *Config) readGeneratedPaths(getenv func(string) string) error {
	c.GeneratedPaths = nil
	v := strings.TrimSpace(getenv(EnvGeneratedPaths))
	if v == "" {
		return nil
	}
	var globs []string
	if err := json.Unmarshal([]byte(v), &globs); err != nil {
		return fmt.Errorf("%s: want a JSON array of globs", EnvGeneratedPaths)
	}
	if len(globs) > maxGeneratedPaths {
		return fmt.Errorf("%s: at most %d globs", EnvGeneratedPaths, maxGeneratedPaths)
	}
	for i, g := range globs {
		g = strings.TrimSpace(g)
		if g == "" || len([]rune(g)) > maxGeneratedPathRunes || !doublestar.ValidatePattern(g) {
			return fmt.Errorf("%s: glob %d is empty, over %d characters or not a valid pattern", EnvGeneratedPaths, i+1, maxGeneratedPathRunes)
		}
		globs[i] = g
	}
	c.GeneratedPaths = globs
	return nil
}
