package config_test

import (
	"testing"

	"github.com/criticizer/criticizer/internal/config"
)

// The code host status is off unless the deployment turns it on; the
// failure opt-in and the Gerrit label are read as given, a bad value
// refused naming its variable (R-CHANNEL-10, R-CHANNEL-11).
// Rules: R-CHANNEL-10, R-CHANNEL-11.
func TestCodeHost_OffByDefault_OnOptIn(t *testing.T) {
	c, err := config.FromEnv(func(string) string { return "" })
	if err != nil || c.Notify.CodeHost != (config.CodeHost{}) {
		t.Fatalf("defaults: %+v %v; want all off", c.Notify.CodeHost, err)
	}
	env := map[string]string{config.EnvCodeHostStatus: "on", config.EnvCheckFailureOnError: "ON", config.EnvGerritStatusLabel: "Criticizer"}
	c, err = config.FromEnv(func(k string) string { return env[k] })
	if err != nil || !c.Notify.CodeHost.Status || !c.Notify.CodeHost.FailOnError || c.Notify.CodeHost.GerritLabel != "Criticizer" {
		t.Fatalf("set: %+v %v", c.Notify.CodeHost, err)
	}
	for k, v := range map[string]string{config.EnvCodeHostStatus: "maybe", config.EnvGerritStatusLabel: "Code Review"} {
		_, err := config.FromEnv(func(n string) string {
			if n == k {
				return v
			}
			return ""
		})
		if err == nil {
			t.Errorf("%s=%q accepted", k, v)
		}
	}
}

// CRITICIZER_CHANNELS is off unless set on; a bad value is refused.
// Rules: R-CHANNEL-15.
func TestChannels_OffByDefault_OnOptIn(t *testing.T) {
	for v, want := range map[string]bool{"": false, "off": false, "on": true, "ON": true} {
		c, err := config.FromEnv(func(k string) string {
			if k == config.EnvChannels {
				return v
			}
			return ""
		})
		if err != nil || c.Channels != want {
			t.Errorf("%s=%q: %v, %v; want %v", config.EnvChannels, v, c.Channels, err, want)
		}
	}
	if _, err := config.FromEnv(func(k string) string {
		if k == config.EnvChannels {
			return "maybe"
		}
		return ""
	}); err == nil {
		t.Errorf("%s=maybe accepted", config.EnvChannels)
	}
}
