package config

import (
	"strings"
	"testing"
)

// A full review runs every 10 versions unless CRITICIZER_FULL_REVIEW_EVERY
// says otherwise, from 1 to 100; anything else is refused at start, naming
// the variable.
// Rules: R-LEDGER-3.
func TestFullReviewEvery_DefaultRangeRefused(t *testing.T) {
	read := func(v string) (Config, error) {
		return FromEnv(func(k string) string {
			if k == EnvFullReviewEvery {
				return v
			}
			return ""
		})
	}
	for v, want := range map[string]int{"": 10, "1": 1, " 25 ": 25, "100": 100} {
		c, err := read(v)
		if err != nil || c.LLM.FullReviewEvery != want {
			t.Errorf("%q: %d, %v; want %d", v, c.LLM.FullReviewEvery, err, want)
		}
	}
	for _, v := range []string{"0", "-3", "101", "ten", "2.5"} {
		if _, err := read(v); err == nil || !strings.Contains(err.Error(), EnvFullReviewEvery) {
			t.Errorf("%q: %v; want an error naming %s", v, err, EnvFullReviewEvery)
		}
	}
}
