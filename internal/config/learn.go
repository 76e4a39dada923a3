package config

import (
	"fmt"
	"strconv"
	"strings"
)

// A team's votes teach the deployment (R-LEARN-1): how many distinct
// readers must mark one rule's findings wrong in one repository, with
// fewer marking them useful, before the rule is proposed as a learning.
const (
	EnvLearnAfter     = "CRITICIZER_LEARN_AFTER"
	DefaultLearnAfter = 3
)

// readLearn reads the learnings' threshold: 1 to 100 readers.
func (c *Config) readLearn(getenv func(string) string) error {
	c.LearnAfter = DefaultLearnAfter
	if v := strings.TrimSpace(getenv(EnvLearnAfter)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return fmt.Errorf("%s: want a whole number of readers from 1 to 100, got %q", EnvLearnAfter, v)
		}
		c.LearnAfter = n
	}
	return nil
}
