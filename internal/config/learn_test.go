package config

import "testing"

// The learnings' threshold is 1 to 100 readers, 3 by default.
// Rules: R-LEARN-1.
func TestFromEnv_LearnAfter(t *testing.T) {
	read := func(env map[string]string) (Config, error) { return FromEnv(func(k string) string { return env[k] }) }
	if c, err := read(nil); err != nil || c.LearnAfter != DefaultLearnAfter {
		t.Fatalf("default: %d %v", c.LearnAfter, err)
	}
	if c, err := read(map[string]string{EnvLearnAfter: " 5 "}); err != nil || c.LearnAfter != 5 {
		t.Fatalf("5: %d %v", c.LearnAfter, err)
	}
	for _, bad := range []string{"0", "-2", "101", "three"} {
		if _, err := read(map[string]string{EnvLearnAfter: bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
