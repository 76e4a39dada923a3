package config_test

import (
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
)

// CRITICIZER_MIN_SEVERITY is a severity or nothing (R-REPO-5); anything
// else is refused, naming the variable.
func TestFromEnv_MinSeverity(t *testing.T) {
	for in, want := range map[string]string{"": "", "info": "info", " Warning ": "warning", "ERROR": "error"} {
		c, err := config.FromEnv(env(map[string]string{config.EnvMinSeverity: in}))
		if err != nil || c.Notify.MinSeverity != want {
			t.Errorf("%q: %q, err %v; want %q", in, c.Notify.MinSeverity, err, want)
		}
	}
	for _, bad := range []string{"critical", "2", "warn"} {
		_, err := config.FromEnv(env(map[string]string{config.EnvMinSeverity: bad}))
		if err == nil || !strings.Contains(err.Error(), config.EnvMinSeverity) {
			t.Errorf("%q: err %v; want an error naming the variable", bad, err)
		}
	}
}
