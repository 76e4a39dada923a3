package devstack

import (
	"strings"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/job"
)

// SAMEnv is the `sam local invoke --env-vars` file for the stack of
// `make run`: for every function, each variable the deployment gives a
// function as a reference to one of its resources (internal/deploy),
// which SAM CLI cannot resolve locally, with the local stack's value, its
// addresses with host as their host (the local stack's host seen from
// SAM's container, e.g. host.docker.internal). SAM overrides only the
// variables a function declares, so each function gets the whole set.
// The endpoints and the local webhook secret come from the template's
// LocalStackHost parameter; secrets are read from the environment, not
// Secrets Manager, locally (CRITICIZER_SECRETS_ARN is empty).
func SAMEnv(cfg config.Config, host, publicURL string) map[string]map[string]string {
	vars := localVars(cfg, publicURL)
	for k, v := range vars {
		vars[k] = strings.NewReplacer("127.0.0.1", host, "localhost", host).Replace(v)
	}
	out := map[string]map[string]string{}
	for _, fn := range deploy.Describe().Functions {
		out[deploy.FunctionID(fn.Name)] = vars
	}
	return out
}

// localVars are the variables every function of the deployment has as
// references to its resources, with cfg's local values.
func localVars(cfg config.Config, publicURL string) map[string]string {
	local := map[string]string{
		deploy.IDJobsTable: cfg.JobsTable, deploy.IDDeliveriesTable: cfg.DeliveriesTable, deploy.IDPayloadBucket: cfg.PayloadBucket,
		deploy.IDConfigurationSet: cfg.ConfigurationSet, deploy.IDHTTPAPI + ".ApiEndpoint": publicURL,
		deploy.QueueID(deploy.QFeedback): cfg.FeedbackQueueURL, deploy.DLQID(deploy.QFeedback): cfg.FeedbackDLQURL,
	}
	for _, s := range job.Stages() {
		local[deploy.QueueID(string(s))], local[deploy.DLQID(string(s))] = cfg.Queues.Queue[s], cfg.Queues.DLQ[s]
	}
	d := deploy.Describe()
	vars := map[string]string{}
	for _, fn := range d.Functions {
		for _, v := range d.Environment(fn) {
			if val, ok := resolveLocal(v.Value, local); ok {
				vars[v.Name] = val
			}
		}
	}
	return vars
}

// resolveLocal is v with its resources' local values: a reference, or a
// join of references; false for a literal or a parameter (SAM resolves
// those from the template). A reference to a resource the local stack has
// no value for (a secret: locally, secrets are variables) is empty.
func resolveLocal(v deploy.Value, local map[string]string) (string, bool) {
	switch v.Op {
	case "Ref", "Fn::GetAtt":
		if v.Op == "Ref" && !strings.HasPrefix(v.Lit, "AWS::") {
			if _, isParam := deploy.Describe().Param(v.Lit); isParam {
				return "", false
			}
		}
		return local[v.Lit], true
	case "Fn::Join":
		var parts []string
		for _, a := range v.Args {
			p, ok := resolveLocal(a, local)
			if !ok {
				return "", false
			}
			if p != "" {
				parts = append(parts, p)
			}
		}
		return strings.Join(parts, v.Lit), true
	}
	return "", false
}
