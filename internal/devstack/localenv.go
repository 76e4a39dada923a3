package devstack

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/deploy/cfn"
)

// DeployedTemplate is template.yaml as internal/deploy renders it now
// (cfn.SAM), parsed: what the local stack gives its functions, so that
// `make run`, the tests and the benchmarks run each function with the
// environment a deploy gives it, not one made up beside it.
func DeployedTemplate() (*Template, error) {
	sam, err := cfn.SAM(deploy.Describe())
	if err != nil {
		return nil, fmt.Errorf("render the template: %w", err)
	}
	b, err := sam.YAML()
	if err != nil {
		return nil, fmt.Errorf("render the template: %w", err)
	}
	return ParseTemplate(b)
}

// LocalPublicURL is the local stack's HTTP API when the caller names none
// (`make run`'s default port).
const LocalPublicURL = "http://127.0.0.1:3000"

// localSecretARN is the ARN the local stack binds secret id to: each
// secret a function's CRITICIZER_SECRETS_ARN names is then known by it.
func localSecretARN(id string) string {
	return "arn:aws:secretsmanager:" + LocalRegion + ":" + LocalAccount + ":secret:local-" + id
}

// LocalStack is template t deployed onto the local resources res, as
// CloudFormation would evaluate it there: the tables, queues and bucket
// Provision made, the configuration set shared names, the HTTP API at
// shared's public URL, every secret at a local ARN, the parameters at
// their defaults but those LocalParameters sets from shared.
func LocalStack(t *Template, res Resources, shared config.Config) (StackValues, error) {
	if shared.PublicURL == "" {
		shared.PublicURL = LocalPublicURL
	}
	bind := LocalBinding{Secrets: map[string]string{}, ConfigurationSet: res.ConfigurationSet(shared), APIEndpoint: shared.PublicURL,
		Parameters: LocalParameters(shared)}
	for _, id := range t.Resources("AWS::SecretsManager::Secret") {
		bind.Secrets[id] = localSecretARN(id)
	}
	return BindLocal(t, res.stackName(), res, bind)
}

// LocalParameters are the deploy parameters the local stack's settings
// stand for, as an operator would choose them for the same settings:
// CodeHostStatus on with the code host's status on, OutboundWebhooks on
// with webhook destinations (which a deployment keeps in a secret the
// template cannot read). The template then gives fetch, llm and notify
// CRITICIZER_CHANNELS from them (R-CHANNEL-15), as it would deployed.
func LocalParameters(shared config.Config) map[string]string {
	out := map[string]string{}
	if shared.Notify.CodeHost.Status {
		out["CodeHostStatus"] = "on"
	}
	if shared.OutboundWebhooks != "" {
		out["OutboundWebhooks"] = "on"
	}
	return out
}

// ConfigurationSet is the name the template's configuration set is
// evaluated to on these resources: shared's, else one named for them. A
// function's configuration keeps none when shared names none
// (localConfigurationSet).
func (r Resources) ConfigurationSet(shared config.Config) string {
	if shared.ConfigurationSet != "" {
		return shared.ConfigurationSet
	}
	return r.stackName() + "-configuration-set"
}

// stackName is the name the resources were provisioned under.
func (r Resources) stackName() string {
	if r.Prefix != "" {
		return r.Prefix
	}
	return strings.TrimSuffix(r.JobsTable, "-jobs")
}

// FunctionConfigs are the configurations of the functions on the local
// stack, by function name: each the one its deployed environment in
// template t gives it, so a variable the template forgets for one
// function is missing locally too, and that function fails here as it
// would deployed. For each function:
//
//   - its environment is t's, evaluated against the local resources
//     (LocalStack): the tables, queues, bucket, configuration set and
//     public URL it is given, and no others, and the template's literals
//     and parameters' defaults;
//   - its secrets are the settings of shared that the secrets its
//     CRITICIZER_SECRETS_ARN names hold (deploy.Secret.Holds), applied as
//     internal/secrets applies them at init, and no others;
//   - the local stack's own settings are then laid over it: every field
//     shared sets to other than the default (the emulators' endpoints,
//     the SES store, a test's settings, what `make run` is given in its
//     environment), but those the template's references to resources and
//     the secrets fill, which come from the template alone.
//
// The last point is what the local stack substitutes, as an operator's
// parameter values do; the first two are where a template's mistake
// shows. Each function's configuration is validated as config.FromEnv
// and secrets.Apply validate it at init.
func FunctionConfigs(t *Template, res Resources, shared config.Config) (map[string]config.Config, error) {
	values, err := LocalStack(t, res, shared)
	if err != nil {
		return nil, err
	}
	d := deploy.Describe()
	secretOf := map[string]deploy.Secret{}
	for _, s := range d.Secrets {
		secretOf[localSecretARN(s.ID)] = s
	}
	base, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		return nil, err
	}
	envs := map[string]map[string]string{}
	// The variables the template sets from its resources, with their
	// local values: the fields they fill are the template's alone.
	resourceVars := map[string]string{}
	for _, fn := range d.Functions {
		env, err := t.FunctionEnv(deploy.FunctionID(fn.Name), values)
		if err != nil {
			return nil, err
		}
		envs[fn.Name] = env
		for _, v := range d.Environment(fn) {
			if val, ok := env[v.Name]; ok && refersToResource(d, v.Value) {
				resourceVars[v.Name] = val
			}
		}
	}
	fromResources, err := config.FromEnv(func(k string) string { return resourceVars[k] })
	if err != nil {
		return nil, fmt.Errorf("the template's resources: %w", err)
	}
	resourceFields := diffFields(base, fromResources)
	var overlay [][]int
	for _, f := range diffFields(base, shared.WithoutSecrets()) {
		if !containsPath(resourceFields, f) {
			overlay = append(overlay, f)
		}
	}
	secrets := shared.Secrets()
	out := map[string]config.Config{}
	for _, fn := range d.Functions {
		env := envs[fn.Name]
		c, err := config.FromEnv(func(k string) string { return env[k] })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", deploy.FunctionID(fn.Name), err)
		}
		held := map[string]string{}
		for _, arn := range strings.Split(c.SecretsARN, ",") {
			if arn = strings.TrimSpace(arn); arn == "" {
				continue
			}
			s, ok := secretOf[arn]
			if !ok {
				return nil, fmt.Errorf("%s: %s names %s, not a secret of the deployment", deploy.FunctionID(fn.Name), config.EnvSecretsARN, arn)
			}
			for _, k := range s.Holds {
				if v, ok := secrets[k]; ok {
					held[k] = v
				}
			}
		}
		// Read locally, not from Secrets Manager: internal/secrets would
		// apply exactly these.
		c.SecretsARN = ""
		cv, sv := reflect.ValueOf(&c).Elem(), reflect.ValueOf(shared)
		for _, f := range overlay {
			cv.FieldByIndex(f).Set(sv.FieldByIndex(f))
		}
		c.ConfigurationSet = localConfigurationSet(c.ConfigurationSet, res, shared)
		if c, err = c.ApplySecrets(held); err != nil {
			return nil, fmt.Errorf("%s: %w", deploy.FunctionID(fn.Name), err)
		}
		out[fn.Name] = c
	}
	return out, nil
}

// localConfigurationSet is the configuration set a function sends with
// and reads evidence by locally: the one the template gives it, but none
// when the local stack names none, as the caller's own SES event bridge
// then tags events with none (a deployment always has one).
func localConfigurationSet(given string, res Resources, shared config.Config) string {
	if shared.ConfigurationSet == "" && given == res.ConfigurationSet(shared) {
		return ""
	}
	return given
}

// refersToResource reports whether v names one of the template's
// resources (a table, queue, secret, the API), not only parameters,
// pseudo parameters and literals.
func refersToResource(d deploy.Deployment, v deploy.Value) bool {
	switch v.Op {
	case "Fn::GetAtt":
		return true
	case "Ref":
		_, param := d.Param(v.Lit)
		return !param && !strings.HasPrefix(v.Lit, "AWS::")
	}
	for _, a := range v.Args {
		if refersToResource(d, a) {
			return true
		}
	}
	return false
}

// diffFields are the paths (reflect field indexes) of the leaves where a
// and b differ. A leaf is a field that is not a struct, or a struct with
// unexported fields (it is set whole).
func diffFields(a, b config.Config) [][]int {
	var out [][]int
	var walk func(x, y reflect.Value, path []int)
	walk = func(x, y reflect.Value, path []int) {
		for i := range x.NumField() {
			f := x.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			p := append(append([]int(nil), path...), i)
			if f.Type.Kind() == reflect.Struct && allExported(f.Type) {
				walk(x.Field(i), y.Field(i), p)
				continue
			}
			if !reflect.DeepEqual(x.Field(i).Interface(), y.Field(i).Interface()) {
				out = append(out, p)
			}
		}
	}
	walk(reflect.ValueOf(a), reflect.ValueOf(b), nil)
	return out
}

func allExported(t reflect.Type) bool {
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			return false
		}
	}
	return true
}

func containsPath(paths [][]int, p []int) bool {
	for _, q := range paths {
		if reflect.DeepEqual(q, p) {
			return true
		}
	}
	return false
}
