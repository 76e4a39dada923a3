package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
)

// The stage runner knows the maxReceiveCount its queue was given: the
// default is what the local stack provisions (infra sets the variable
// from its own redrive policy, checked there); a bad value names the
// variable.
// Rules: R-STAGE-10, R-STAGE-9.
func TestFromEnv_MaxReceiveCountAndModelTimeout(t *testing.T) {
	c, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxReceiveCount != devstack.MaxReceiveCount {
		t.Errorf("default maxReceiveCount %d, the local stack provisions %d", c.MaxReceiveCount, devstack.MaxReceiveCount)
	}
	if c.ModelTimeout != config.DefaultModelTimeout {
		t.Errorf("model timeout %v", c.ModelTimeout)
	}
	env := map[string]string{config.EnvMaxReceiveCount: "4", config.EnvModelTimeout: "90s"}
	if c, err = config.FromEnv(func(k string) string { return env[k] }); err != nil || c.MaxReceiveCount != 4 || c.ModelTimeout != 90*time.Second {
		t.Errorf("set: %d %v %v", c.MaxReceiveCount, c.ModelTimeout, err)
	}
	for k, v := range map[string]string{config.EnvMaxReceiveCount: "0", config.EnvModelTimeout: "soon"} {
		_, err := config.FromEnv(func(n string) string {
			if n == k {
				return v
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}
