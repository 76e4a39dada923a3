package cfn

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file is the one evaluator of the template's intrinsic functions:
// what CloudFormation computes when it deploys template.yaml. The local
// stack (internal/devstack: make run, the tests, the rehearsal, the
// benchmarks) evaluates each function's environment and role with it
// against the local resources, and EnvironmentSizes evaluates the
// environments against the longest values AWS allows; nothing else
// evaluates an intrinsic. It is hand-written: the Go CloudFormation
// libraries (goformation, cfn-lint's Go ports) parse templates but
// evaluate no intrinsics against chosen values.

// StackValues is what CloudFormation knows when it evaluates a template
// for one stack: the pseudo parameters, the parameters given (the others
// take their defaults), and what each resource's Ref and Fn::GetAtt
// return. A rehearsal binds the template's resources to the local stack's
// (queue URLs, table names, secret ARNs); a reference to a resource it
// has not bound is an error, as a reference to a resource that does not
// exist fails a deploy. Conditions, when it names one, decide it instead
// of its definition (a sizing that tries both branches).
//
// Symbolic leaves every reference to a resource or a pseudo parameter for
// CloudFormation: it evaluates to ${Id}, ${Id.Attr} or ${AWS::Region},
// and a literal ${ to ${! (the CDK app's rendering, which knows only the
// parameters: the result is a literal, or a Fn::Sub of it).
type StackValues struct {
	StackName, Region, AccountID, Partition, URLSuffix string
	Parameters                                         map[string]string
	Resources                                          map[string]BoundResource
	Conditions                                         map[string]bool
	Symbolic                                           bool
}

// BoundResource is one resource's values: what Ref returns, and its
// attributes for Fn::GetAtt (Arn, QueueName…).
type BoundResource struct {
	Ref   string
	Attrs map[string]string
}

// NoValue is what AWS::NoValue evaluates to: the property (a variable, a
// statement) is removed.
var NoValue = &struct{ name string }{"AWS::NoValue"}

// ErrUnresolved marks a reference to nothing the stack has.
var ErrUnresolved = errors.New("unresolvable reference")

// Eval evaluates node n of the template whose root mapping is root, in
// stack s: a string, a list ([]any), a mapping (map[string]any) or
// NoValue.
func Eval(root, n *yaml.Node, s StackValues) (any, error) {
	if n == nil {
		return nil, errors.New("no value to evaluate")
	}
	return newEvaluator(root, s).eval(n)
}

// EvalCondition decides the condition function n (Fn::Equals, Fn::Not,
// Fn::And, Fn::Or, Condition) of the template whose root is root in
// stack s.
func EvalCondition(root, n *yaml.Node, s StackValues) (bool, error) {
	fn, arg, ok := intrinsic(n)
	if !ok {
		return false, fmt.Errorf("not a condition function")
	}
	return newEvaluator(root, s).boolean(fn, arg)
}

func newEvaluator(root *yaml.Node, s StackValues) *evaluator {
	e := &evaluator{root: root, s: s, conds: map[string]bool{}}
	for k, v := range s.Conditions {
		e.conds[k] = v
	}
	return e
}

// literal is text as a value: in a symbolic evaluation its ${ escaped,
// so that it stays apart from the references.
func (e *evaluator) literal(text string) string {
	if e.s.Symbolic {
		return strings.ReplaceAll(text, "${", "${!")
	}
	return text
}

// Intrinsic recognizes !Tag arg and {Fn::X: arg} / {Ref: arg}, returning
// the function's long name (Ref, Fn::GetAtt…) and its argument node.
func Intrinsic(n *yaml.Node) (string, *yaml.Node, bool) { return intrinsic(n) }

// evaluator evaluates intrinsic functions, in short (!Ref) or long
// (Fn::GetAtt) form. Values are strings, lists ([]any), mappings
// (map[string]any, an IAM statement) or NoValue.
type evaluator struct {
	root  *yaml.Node
	s     StackValues
	conds map[string]bool
	busy  []string // conditions being evaluated (a cycle is an error)
}

func (e *evaluator) eval(n *yaml.Node) (any, error) {
	if n.Kind == yaml.AliasNode {
		return e.eval(n.Alias)
	}
	if fn, arg, ok := intrinsic(n); ok {
		return e.call(fn, arg)
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return e.literal(n.Value), nil
	case yaml.SequenceNode:
		var out []any
		for _, c := range n.Content {
			v, err := e.eval(c)
			if err != nil {
				return nil, err
			}
			if v != NoValue {
				out = append(out, v)
			}
		}
		return out, nil
	case yaml.MappingNode:
		out := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := e.eval(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			if v != NoValue {
				out[n.Content[i].Value] = v
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("line %d: a node of kind %d where a value is expected", n.Line, n.Kind)
}

// intrinsic recognizes !Tag arg and {Fn::X: arg} / {Ref: arg}, returning
// the function's long name (Ref, Fn::GetAtt…) and its argument node.
func intrinsic(n *yaml.Node) (string, *yaml.Node, bool) {
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		name := strings.TrimPrefix(n.Tag, "!")
		arg := *n
		arg.Tag = ""
		if arg.Kind == yaml.ScalarNode {
			arg.Tag = "!!str"
		}
		if name == "Ref" || name == "Condition" {
			return name, &arg, true
		}
		return "Fn::" + name, &arg, true
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		k := n.Content[0].Value
		if k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::") {
			return k, n.Content[1], true
		}
	}
	return "", nil, false
}

func (e *evaluator) call(fn string, arg *yaml.Node) (any, error) {
	switch fn {
	case "Ref":
		return e.ref(arg.Value)
	case "Fn::GetAtt":
		var id, attr string
		if arg.Kind == yaml.ScalarNode {
			id, attr, _ = strings.Cut(arg.Value, ".")
		} else if len(arg.Content) == 2 {
			id, attr = arg.Content[0].Value, arg.Content[1].Value
		}
		return e.getAtt(id, attr)
	case "Fn::Sub":
		return e.sub(arg)
	case "Fn::Join":
		args, err := e.list(arg, 2, fn)
		if err != nil {
			return nil, err
		}
		sep, ok1 := args[0].(string)
		parts, ok2 := args[1].([]any)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("Fn::Join: want [separator, [values]]")
		}
		var strs []string
		for _, p := range parts {
			s, ok := p.(string)
			if !ok {
				return nil, fmt.Errorf("Fn::Join: a value is not a string")
			}
			strs = append(strs, s)
		}
		return strings.Join(strs, sep), nil
	case "Fn::Split":
		args, err := e.list(arg, 2, fn)
		if err != nil {
			return nil, err
		}
		sep, ok1 := args[0].(string)
		str, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("Fn::Split: want [separator, string]")
		}
		var out []any
		for _, p := range strings.Split(str, sep) {
			out = append(out, p)
		}
		return out, nil
	case "Fn::Select":
		args, err := e.list(arg, 2, fn)
		if err != nil {
			return nil, err
		}
		i, err1 := strconv.Atoi(fmt.Sprint(args[0]))
		list, ok := args[1].([]any)
		if err1 != nil || !ok || i < 0 || i >= len(list) {
			return nil, fmt.Errorf("Fn::Select: index %v out of range", args[0])
		}
		return list[i], nil
	case "Fn::If":
		if arg.Kind != yaml.SequenceNode || len(arg.Content) != 3 {
			return nil, fmt.Errorf("Fn::If: want [condition, then, else]")
		}
		ok, err := e.condition(arg.Content[0].Value)
		if err != nil {
			return nil, err
		}
		if ok {
			return e.eval(arg.Content[1])
		}
		return e.eval(arg.Content[2])
	case "Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or", "Condition":
		b, err := e.boolean(fn, arg)
		if err != nil {
			return nil, err
		}
		return strconv.FormatBool(b), nil
	}
	return nil, fmt.Errorf("%s is not supported by the evaluator", fn)
}

// list evaluates a sequence argument of n elements.
func (e *evaluator) list(arg *yaml.Node, n int, fn string) ([]any, error) {
	if arg.Kind != yaml.SequenceNode || len(arg.Content) != n {
		return nil, fmt.Errorf("%s: want a list of %d", fn, n)
	}
	v, err := e.eval(arg)
	if err != nil {
		return nil, err
	}
	l := v.([]any)
	if len(l) != n {
		return nil, fmt.Errorf("%s: an argument is AWS::NoValue", fn)
	}
	return l, nil
}

// boolean evaluates a condition function.
func (e *evaluator) boolean(fn string, arg *yaml.Node) (bool, error) {
	if fn == "Condition" {
		return e.condition(arg.Value)
	}
	if fn == "Fn::Equals" {
		args, err := e.list(arg, 2, fn)
		if err != nil {
			return false, err
		}
		return fmt.Sprint(args[0]) == fmt.Sprint(args[1]), nil
	}
	if arg.Kind != yaml.SequenceNode || len(arg.Content) == 0 {
		return false, fmt.Errorf("%s: want a list of conditions", fn)
	}
	var vals []bool
	for _, c := range arg.Content {
		inner, a, ok := intrinsic(c)
		if !ok {
			return false, fmt.Errorf("%s: %q is not a condition", fn, c.Value)
		}
		b, err := e.boolean(inner, a)
		if err != nil {
			return false, err
		}
		vals = append(vals, b)
	}
	switch fn {
	case "Fn::Not":
		return !vals[0], nil
	case "Fn::And":
		return !slices.Contains(vals, false), nil
	case "Fn::Or":
		return slices.Contains(vals, true), nil
	}
	return false, fmt.Errorf("%s is not a condition function", fn)
}

// condition evaluates a named condition of the Conditions section.
func (e *evaluator) condition(name string) (bool, error) {
	if v, ok := e.conds[name]; ok {
		return v, nil
	}
	if slices.Contains(e.busy, name) {
		return false, fmt.Errorf("condition %s refers to itself", name)
	}
	n := yamlPath(e.root, "Conditions", name)
	if n == nil {
		return false, fmt.Errorf("condition %s: %w (no such condition)", name, ErrUnresolved)
	}
	fn, arg, ok := intrinsic(n)
	if !ok {
		return false, fmt.Errorf("condition %s is not a condition function", name)
	}
	e.busy = append(e.busy, name)
	v, err := e.boolean(fn, arg)
	e.busy = e.busy[:len(e.busy)-1]
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	e.conds[name] = v
	return v, nil
}

// ref is Ref: a pseudo parameter, a parameter, or a bound resource.
func (e *evaluator) ref(name string) (any, error) {
	switch name {
	case "AWS::NoValue":
		return NoValue, nil
	case "AWS::Region", "AWS::AccountId", "AWS::Partition", "AWS::StackName", "AWS::URLSuffix":
		if e.s.Symbolic {
			return "${" + name + "}", nil
		}
	}
	switch name {
	case "AWS::Region":
		return e.s.Region, nil
	case "AWS::AccountId":
		return e.s.AccountID, nil
	case "AWS::Partition":
		return e.s.Partition, nil
	case "AWS::StackName":
		return e.s.StackName, nil
	case "AWS::URLSuffix":
		return e.s.URLSuffix, nil
	}
	if p := yamlPath(e.root, "Parameters", name); p != nil {
		v, err := e.parameter(name, p)
		return e.literal(v), err
	}
	if e.s.Symbolic {
		return "${" + name + "}", nil
	}
	if yamlPath(e.root, "Resources", name) == nil {
		return nil, fmt.Errorf("Ref %s: %w (no parameter or resource of that name)", name, ErrUnresolved)
	}
	r, ok := e.s.Resources[name]
	if !ok || r.Ref == "" {
		return nil, fmt.Errorf("Ref %s: %w (the stack has no value for it)", name, ErrUnresolved)
	}
	return r.Ref, nil
}

// parameter is a parameter's value: the one given, else its default.
func (e *evaluator) parameter(name string, p *yaml.Node) (string, error) {
	v, ok := e.s.Parameters[name]
	if !ok {
		d := yamlChild(p, "Default")
		if d == nil {
			return "", fmt.Errorf("Ref %s: %w (a parameter with no default, and none given)", name, ErrUnresolved)
		}
		v = d.Value
	}
	if allowed := yamlChild(p, "AllowedValues"); allowed != nil {
		var vals []string
		for _, a := range allowed.Content {
			vals = append(vals, a.Value)
		}
		if !slices.Contains(vals, v) {
			return "", fmt.Errorf("parameter %s: %q is not one of %v", name, v, vals)
		}
	}
	return v, nil
}

func (e *evaluator) getAtt(id, attr string) (any, error) {
	if e.s.Symbolic {
		return "${" + id + "." + attr + "}", nil
	}
	if yamlPath(e.root, "Resources", id) == nil {
		return nil, fmt.Errorf("Fn::GetAtt %s.%s: %w (no resource %s)", id, attr, ErrUnresolved, id)
	}
	v, ok := e.s.Resources[id].Attrs[attr]
	if !ok {
		return nil, fmt.Errorf("Fn::GetAtt %s.%s: %w (the stack has no value for it)", id, attr, ErrUnresolved)
	}
	return v, nil
}

// sub is Fn::Sub: ${Name}, ${Resource.Attr} and ${!Literal}, with the
// optional map of its own variables.
func (e *evaluator) sub(arg *yaml.Node) (any, error) {
	str, vars := arg, (*yaml.Node)(nil)
	if arg.Kind == yaml.SequenceNode {
		if len(arg.Content) != 2 {
			return nil, fmt.Errorf("Fn::Sub: want a string or [string, {variables}]")
		}
		str, vars = arg.Content[0], arg.Content[1]
	}
	in := str.Value
	var b strings.Builder
	for {
		i := strings.Index(in, "${")
		if i < 0 {
			b.WriteString(in)
			return b.String(), nil
		}
		j := strings.Index(in[i:], "}")
		if j < 0 {
			return nil, fmt.Errorf("Fn::Sub: unclosed ${ in %q", str.Value)
		}
		b.WriteString(in[:i])
		name := in[i+2 : i+j]
		in = in[i+j+1:]
		if strings.HasPrefix(name, "!") {
			// A literal ${…}; kept escaped in a symbolic evaluation.
			b.WriteString(e.literal("${" + name[1:] + "}"))
			continue
		}
		var v any
		var err error
		if n := yamlChild(vars, name); n != nil {
			v, err = e.eval(n)
		} else if id, attr, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(name, "AWS::") {
			v, err = e.getAtt(id, attr)
		} else {
			v, err = e.ref(name)
		}
		if err != nil {
			return nil, fmt.Errorf("Fn::Sub %q: %w", str.Value, err)
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("Fn::Sub %q: ${%s} is not a string", str.Value, name)
		}
		b.WriteString(s)
	}
}

// yamlChild is the value node of key in a YAML mapping node.
func yamlChild(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// YAMLPath is the node at keys below n, through mapping nodes; nil when
// one is missing. The local stack reads the rendered template with it.
func YAMLPath(n *yaml.Node, keys ...string) *yaml.Node { return yamlPath(n, keys...) }

func yamlPath(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		n = yamlChild(n, k)
	}
	return n
}
