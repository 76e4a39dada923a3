package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
)

// A spent SES daily quota pauses sending for CRITICIZER_SES_QUOTA_RECHECK
// (R-RATE-3): 5 minutes by default, from a second to SQS's longest delay
// of 15 minutes; anything else is refused, naming the variable.
func TestFromEnv_SESQuotaRecheck(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{{"", 5 * time.Minute}, {"1s", time.Second}, {"15m", 15 * time.Minute}, {"90s", 90 * time.Second}} {
		c, err := config.FromEnv(env(map[string]string{config.EnvSESQuotaRecheck: tt.in}))
		if err != nil || c.Notify.SESQuotaRecheck != tt.want {
			t.Errorf("%s=%q: %s, err %v; want %s", config.EnvSESQuotaRecheck, tt.in, c.Notify.SESQuotaRecheck, err, tt.want)
		}
	}
	for _, bad := range []string{"500ms", "16m", "1h", "soon", "-5m"} {
		_, err := config.FromEnv(env(map[string]string{config.EnvSESQuotaRecheck: bad}))
		if err == nil || !strings.Contains(err.Error(), config.EnvSESQuotaRecheck) {
			t.Errorf("%s=%q: err %v; want an error naming the variable", config.EnvSESQuotaRecheck, bad, err)
		}
	}
}
