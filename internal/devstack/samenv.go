package devstack

import (
	"strings"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
)

// SAMEnv is the `sam local invoke --env-vars` file for the stack of
// `make run`: for every function, each variable the template t gives it
// as a reference to one of its resources (internal/deploy), which SAM CLI
// cannot resolve locally, evaluated against the local resources res
// (LocalStack, the one evaluation every local path uses), its addresses
// with host as their host (the local stack's host seen from SAM's
// container, e.g. host.docker.internal). The endpoints and the local
// webhook secret come from the template's LocalStackHost parameter;
// secrets are read from the environment, not Secrets Manager, locally
// (CRITICIZER_SECRETS_ARN is empty).
func SAMEnv(t *Template, res Resources, cfg config.Config, host, publicURL string) (map[string]map[string]string, error) {
	cfg.PublicURL = publicURL
	values, err := LocalStack(t, res, cfg)
	if err != nil {
		return nil, err
	}
	local := strings.NewReplacer("127.0.0.1", host, "localhost", host)
	d := deploy.Describe()
	out := map[string]map[string]string{}
	for _, fn := range d.Functions {
		id := deploy.FunctionID(fn.Name)
		env, err := t.FunctionEnv(id, values)
		if err != nil {
			return nil, err
		}
		vars := map[string]string{}
		for _, v := range d.Environment(fn) {
			val, ok := env[v.Name]
			if !ok || !refersToResource(d, v.Value) {
				continue
			}
			if v.Name == config.EnvSecretsARN {
				val = ""
			}
			vars[v.Name] = local.Replace(val)
		}
		out[id] = vars
	}
	return out, nil
}
