package config

import (
	"fmt"
	"time"
)

// EnvSESQuotaRecheck is how long the notifier pauses sending once the SES
// account's daily quota is spent before it reads the quota again (R-RATE-3).
const EnvSESQuotaRecheck = "CRITICIZER_SES_QUOTA_RECHECK"

// DefaultSESQuotaRecheck is the pause: the quota is a rolling 24 hours, so
// room comes back a little at a time; 5 minutes is within AWS's "wait up
// to 10 minutes" and under the sweeper's stuck-job threshold
// (sesmail.DefaultQuotaRecheck says more).
const DefaultSESQuotaRecheck = 5 * time.Minute

// sesQuotaRecheck reads EnvSESQuotaRecheck: a duration from a second to 15
// minutes, SQS's longest message delay (a paused message waits as a
// delayed copy on its queue).
func sesQuotaRecheck(getenv func(string) string) (time.Duration, error) {
	d, err := duration(getenv, EnvSESQuotaRecheck, DefaultSESQuotaRecheck)
	if err != nil {
		return 0, err
	}
	if d < time.Second || d > 15*time.Minute {
		return 0, fmt.Errorf("%s: want a duration from 1s to 15m (SQS's longest delay), got %s", EnvSESQuotaRecheck, d)
	}
	return d, nil
}
