package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultMaxReceiveCount is the stage queues' redrive maxReceiveCount
// that infra deploys (and internal/devstack provisions): the stage runner
// dead-letters a message itself, with its envelope, on the last receive
// SQS gives it (R-STAGE-10), so it must know the number. Deployments set
// CRITICIZER_MAX_RECEIVE_COUNT from the redrive policy itself.
const DefaultMaxReceiveCount = 10

// DefaultModelTimeout bounds one model call (R-STAGE-9): the default
// answer (5 findings, about 1,400 output tokens) takes well under a
// minute even from a slow model on a long prompt; 5 minutes also covers
// the largest one (50 findings, about 10,400 tokens) at 35 tokens a
// second. The llm function's timeout is sized from it (infra).
const DefaultModelTimeout = 5 * time.Minute

// readDeadlines reads CRITICIZER_MAX_RECEIVE_COUNT and
// CRITICIZER_MODEL_TIMEOUT.
func (c *Config) readDeadlines(getenv func(string) string) error {
	c.MaxReceiveCount = DefaultMaxReceiveCount
	if v := strings.TrimSpace(getenv(EnvMaxReceiveCount)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			// SQS's own range for maxReceiveCount.
			return fmt.Errorf("%s: want the queues' maxReceiveCount, a whole number from 1 to 1000, got %q", EnvMaxReceiveCount, v)
		}
		c.MaxReceiveCount = n
	}
	var err error
	c.LLM.ModelTimeout, err = duration(getenv, EnvModelTimeout, DefaultModelTimeout)
	return err
}
