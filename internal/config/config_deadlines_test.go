package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
)

// The stage runner knows the maxReceiveCount its queue was given: the
// default is the deployment's redrive limit, which the local stack
// provisions too (a deployment sets the variable from it,
// TestDeadlineArithmetic); a bad value names the variable.
// Rules: R-STAGE-10, R-STAGE-9.
func TestFromEnv_MaxReceiveCountAndModelTimeout(t *testing.T) {
	c, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxReceiveCount != deploy.MaxReceiveCount {
		t.Errorf("default maxReceiveCount %d, the deployment's redrive limit is %d", c.MaxReceiveCount, deploy.MaxReceiveCount)
	}
	if c.LLM.ModelTimeout != config.DefaultModelTimeout {
		t.Errorf("model timeout %v", c.LLM.ModelTimeout)
	}
	env := map[string]string{config.EnvMaxReceiveCount: "4", config.EnvModelTimeout: "90s"}
	if c, err = config.FromEnv(func(k string) string { return env[k] }); err != nil || c.MaxReceiveCount != 4 || c.LLM.ModelTimeout != 90*time.Second {
		t.Errorf("set: %d %v %v", c.MaxReceiveCount, c.LLM.ModelTimeout, err)
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
