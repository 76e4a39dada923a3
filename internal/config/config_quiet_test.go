package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
)

// Quiet unless something is new (R-QUIET-1..3): the collapse window is
// 90s by default, 0 turns it off, at most SQS's 15-minute delay; the
// same diff and unchanged reruns are not mailed unless set to true.
// Anything else is refused, naming the variable.
func TestFromEnv_Quiet(t *testing.T) {
	c, err := config.FromEnv(env(nil))
	if err != nil || c.LLM.CollapseWindow != 90*time.Second || c.Notify.MailSameDiff || c.Notify.MailUnchangedReruns {
		t.Fatalf("defaults: %+v %+v, err %v; want a 90s window, quiet", c.LLM, c.Notify, err)
	}
	for in, want := range map[string]time.Duration{"0": 0, "0s": 0, "5s": 5 * time.Second, "15m": 15 * time.Minute} {
		c, err := config.FromEnv(env(map[string]string{config.EnvCollapseWindow: in}))
		if err != nil || c.LLM.CollapseWindow != want {
			t.Errorf("%s=%q: %s, err %v; want %s", config.EnvCollapseWindow, in, c.LLM.CollapseWindow, err, want)
		}
	}
	c, err = config.FromEnv(env(map[string]string{config.EnvMailSameDiff: "true", config.EnvMailUnchangedReruns: "1"}))
	if err != nil || !c.Notify.MailSameDiff || !c.Notify.MailUnchangedReruns {
		t.Errorf("both set: %+v, err %v; want both on", c.Notify, err)
	}
	for name, bad := range map[string]string{config.EnvCollapseWindow: "16m", config.EnvMailSameDiff: "sometimes",
		config.EnvMailUnchangedReruns: "yes please"} {
		_, err := config.FromEnv(env(map[string]string{name: bad}))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: err %v; want an error naming the variable", name, bad, err)
		}
	}
	if _, err := config.FromEnv(env(map[string]string{config.EnvCollapseWindow: "-1s"})); err == nil {
		t.Errorf("%s=-1s accepted", config.EnvCollapseWindow)
	}
}
