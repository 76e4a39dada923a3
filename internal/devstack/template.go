package devstack

import (
	"fmt"
	"os"
	"slices"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/criticizer/criticizer/internal/deploy/cfn"
)

// StackValues and BoundResource are the values of one stack the
// template is evaluated in (cfn.Eval, the one evaluator).
type (
	StackValues   = cfn.StackValues
	BoundResource = cfn.BoundResource
)

// Template is a SAM template (template.yaml), read to learn what
// CloudFormation would give each function: its environment, with every
// intrinsic function evaluated against the values of one stack
// (StackValues), by internal/deploy/cfn's evaluator. The deploy rehearsal (cmd/rehearse) runs each real
// bootstrap with exactly that environment, so a variable the template
// forgets, misnames or cannot resolve fails there as it would on AWS.
type Template struct {
	root *yaml.Node
}

// LoadTemplate reads and parses the template at path.
func LoadTemplate(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTemplate(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseTemplate parses a template's YAML.
func ParseTemplate(b []byte) (*Template, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a template: the document is not a mapping")
	}
	return &Template{root: doc.Content[0]}, nil
}

// Resources returns the logical ids of the template's resources of type
// typ (e.g. AWS::SQS::Queue), sorted.
func (t *Template) Resources(typ string) []string {
	var ids []string
	res := cfn.YAMLPath(t.root, "Resources")
	for i := 0; res != nil && i+1 < len(res.Content); i += 2 {
		if v := cfn.YAMLPath(res.Content[i+1], "Type"); v != nil && v.Value == typ {
			ids = append(ids, res.Content[i].Value)
		}
	}
	sort.Strings(ids)
	return ids
}

// Functions returns the logical ids of the template's functions
// (AWS::Serverless::Function), sorted.
func (t *Template) Functions() []string { return t.Resources("AWS::Serverless::Function") }

// Property is a resource's property node at path below Properties, nil
// when absent.
func (t *Template) Property(id string, path ...string) *yaml.Node {
	return cfn.YAMLPath(t.root, slices.Concat([]string{"Resources", id, "Properties"}, path)...)
}

// EnvError is a function variable the template gives a value that cannot
// be evaluated: a reference to nothing the stack has, an unsupported
// intrinsic, a parameter without a value.
type EnvError struct {
	Function, Variable string
	Err                error
}

func (e *EnvError) Error() string {
	return fmt.Sprintf("%s: environment variable %s: %v", e.Function, e.Variable, e.Err)
}

func (e *EnvError) Unwrap() error { return e.Err }

// FunctionEnv is the environment CloudFormation would give function id
// in stack s: SAM's Globals.Function.Environment.Variables merged with the
// function's own (the function's win), each value evaluated; a variable
// whose value is AWS::NoValue is left out. Variables whose names Lambda
// reserves are refused, as Lambda refuses them at deploy.
func (t *Template) FunctionEnv(id string, s StackValues) (map[string]string, error) {
	fn := cfn.YAMLPath(t.root, "Resources", id)
	if fn == nil {
		return nil, fmt.Errorf("template: no resource %s", id)
	}
	if typ := cfn.YAMLPath(fn, "Type"); typ == nil || typ.Value != "AWS::Serverless::Function" {
		return nil, fmt.Errorf("template: %s is not an AWS::Serverless::Function", id)
	}
	env := map[string]string{}
	for _, vars := range []*yaml.Node{
		cfn.YAMLPath(t.root, "Globals", "Function", "Environment", "Variables"),
		t.Property(id, "Environment", "Variables"),
	} {
		for i := 0; vars != nil && i+1 < len(vars.Content); i += 2 {
			name := vars.Content[i].Value
			if lambdaReserved[name] {
				return nil, &EnvError{Function: id, Variable: name, Err: fmt.Errorf("Lambda reserves this name: the deploy fails")}
			}
			v, err := cfn.Eval(t.root, vars.Content[i+1], s)
			if err != nil {
				return nil, &EnvError{Function: id, Variable: name, Err: err}
			}
			if v == cfn.NoValue {
				delete(env, name)
				continue
			}
			str, ok := v.(string)
			if !ok {
				return nil, &EnvError{Function: id, Variable: name, Err: fmt.Errorf("the value is not a string")}
			}
			env[name] = str
		}
	}
	return env, nil
}

// Eval evaluates a node of the template (a resource's property, as
// Property returns it) in stack s, to a string.
func (t *Template) Eval(n *yaml.Node, s StackValues) (string, error) {
	v, err := cfn.Eval(t.root, n, s)
	if err != nil {
		return "", err
	}
	str, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("not a string")
	}
	return str, nil
}

// lambdaReserved are the environment variable names Lambda sets itself
// and refuses in a function's configuration.
var lambdaReserved = map[string]bool{
	"_HANDLER": true, "_X_AMZN_TRACE_ID": true, "AWS_DEFAULT_REGION": true, "AWS_REGION": true,
	"AWS_EXECUTION_ENV": true, "AWS_LAMBDA_FUNCTION_NAME": true, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": true,
	"AWS_LAMBDA_FUNCTION_VERSION": true, "AWS_LAMBDA_INITIALIZATION_TYPE": true, "AWS_LAMBDA_LOG_GROUP_NAME": true,
	"AWS_LAMBDA_LOG_STREAM_NAME": true, "AWS_ACCESS_KEY": true, "AWS_ACCESS_KEY_ID": true,
	"AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true, "AWS_LAMBDA_RUNTIME_API": true,
	"LAMBDA_TASK_ROOT": true, "LAMBDA_RUNTIME_DIR": true,
}
