package config

import (
	"fmt"
	"strconv"
	"strings"
)

// EnvFullReviewEvery sets how many versions a changelist's reruns may build
// on one full review before every file is reviewed again (R-LEDGER-3).
const EnvFullReviewEvery = "CRITICIZER_FULL_REVIEW_EVERY"

// DefaultFullReviewEvery is EnvFullReviewEvery's default: the critic's
// (critic.DefaultFullReviewEvery), a full review every 10 versions.
const DefaultFullReviewEvery = 10

// maxFullReviewEvery bounds the setting: past it a missed finding could
// stay unreported for the whole life of a long changelist.
const maxFullReviewEvery = 100

// readFullReviewEvery reads EnvFullReviewEvery: a whole number from 1 (every
// version reviewed in full, still compared) to maxFullReviewEvery.
func (c *Config) readFullReviewEvery(getenv func(string) string) error {
	c.LLM.FullReviewEvery = DefaultFullReviewEvery
	v := strings.TrimSpace(getenv(EnvFullReviewEvery))
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxFullReviewEvery {
		return fmt.Errorf("%s: want a whole number from 1 to %d", EnvFullReviewEvery, maxFullReviewEvery)
	}
	c.LLM.FullReviewEvery = n
	return nil
}
