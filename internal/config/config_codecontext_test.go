package config

import (
	"strings"
	"testing"
)

// A changed file of up to 128 KiB is read at the head for the code around
// its hunks unless CRITICIZER_CONTEXT_FILE_BYTES says otherwise, 0 (off)
// to 1 MiB; anything else is refused at start, naming the variable.
// Rules: R-CONTEXT-2.
func TestContextFileBytes_DefaultOffRangeRefused(t *testing.T) {
	read := func(v string) (Config, error) {
		return FromEnv(func(k string) string {
			if k == EnvContextFileBytes {
				return v
			}
			return ""
		})
	}
	for v, want := range map[string]int{"": 128 << 10, "0": 0, " 4096 ": 4096, "1048576": 1 << 20} {
		c, err := read(v)
		if err != nil || c.ContextFileBytes != want {
			t.Errorf("%q: %d, %v; want %d", v, c.ContextFileBytes, err, want)
		}
	}
	for _, v := range []string{"-1", "1048577", "lots", "1.5"} {
		if _, err := read(v); err == nil || !strings.Contains(err.Error(), EnvContextFileBytes) {
			t.Errorf("%q: %v; want an error naming %s", v, err, EnvContextFileBytes)
		}
	}
}
