package config_test

import (
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
)

// : the notifiers keep under a configured
// maximum send rate. CRITICIZER_MAX_SEND_RATE defaults to SES's 14/s for a
// new production account; 0 turns the limiter off; anything else that is
// not a whole number >= 0 is refused, naming the variable.
// Rules: R-RATE-1.
func TestFromEnv_MaxSendRate(t *testing.T) {
	if config.EnvMaxSendRate != "CRITICIZER_MAX_SEND_RATE" {
		t.Fatalf("env name %q", config.EnvMaxSendRate)
	}
	for _, tt := range []struct {
		in   string
		want int
	}{{"", 14}, {"0", 0}, {"1", 1}, {" 50 ", 50}} {
		c, err := config.FromEnv(env(map[string]string{config.EnvMaxSendRate: tt.in}))
		if err != nil || c.Notify.MaxSendRate != tt.want {
			t.Errorf("%s=%q: rate %d, err %v; want %d", config.EnvMaxSendRate, tt.in, c.Notify.MaxSendRate, err, tt.want)
		}
	}
	for _, bad := range []string{"-1", "14.5", "fast", "14/s"} {
		_, err := config.FromEnv(env(map[string]string{config.EnvMaxSendRate: bad}))
		if err == nil || !strings.Contains(err.Error(), config.EnvMaxSendRate) {
			t.Errorf("%s=%q: err %v; want an error naming the variable", config.EnvMaxSendRate, bad, err)
		}
	}
}
