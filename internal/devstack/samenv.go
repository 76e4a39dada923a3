package devstack

import (
	"strings"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/job"
)

// SAMFunctionID is a function's logical id in template.yaml
// (IntakeFunction, LlmFunction…).
func SAMFunctionID(fn string) string { return strings.ToUpper(fn[:1]) + fn[1:] + "Function" }

// SAMEnv is the `sam local invoke --env-vars` file for the stack of
// `make run`: for every function, the variables template.yaml declares
// with resource references, given the local stack's names, with its
// addresses as host (the local stack's host seen from SAM's container,
// e.g. host.docker.internal). SAM overrides only the variables a function
// declares, so each function gets the whole set. The endpoints and the
// local webhook secret come from the template's LocalStackHost parameter;
// secrets are read from the environment, not Secrets Manager, locally.
func SAMEnv(cfg config.Config, host, publicURL string) map[string]map[string]string {
	local := func(u string) string {
		return strings.NewReplacer("127.0.0.1", host, "localhost", host).Replace(u)
	}
	vars := map[string]string{
		config.EnvJobsTable:        cfg.JobsTable,
		config.EnvDeliveriesTable:  cfg.DeliveriesTable,
		config.EnvPayloadBucket:    cfg.PayloadBucket,
		config.EnvConfigurationSet: cfg.ConfigurationSet,
		config.EnvSecretsARN:       "",
		config.EnvPublicURL:        local(publicURL),
		config.EnvFeedbackQueueURL: local(cfg.FeedbackQueueURL),
		config.EnvFeedbackDLQURL:   local(cfg.FeedbackDLQURL),
	}
	for _, s := range job.Stages() {
		vars[config.QueueEnv(s)] = local(cfg.Queues.Queue[s])
		vars[config.DLQEnv(s)] = local(cfg.Queues.DLQ[s])
	}
	out := map[string]map[string]string{}
	for _, fn := range Names() {
		out[SAMFunctionID(fn)] = vars
	}
	return out
}
