package cfn

import (
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/criticizer/criticizer/internal/deploy"
)

// noValue is AWS::NoValue once a rendering has decided it: the key or the
// element holding it is left out.
type noValue struct{}

// values converts the description's Values to tree nodes, as
// template.yaml writes them: references to parameters and resources,
// conditions for CloudFormation. With params (the CDK app's rendering)
// each node is then evaluated by the one evaluator (Eval), the
// parameters known and every resource and pseudo parameter left for
// CloudFormation (StackValues.Symbolic): what remains is a literal, a
// Ref, a Fn::GetAtt or a Fn::Sub, and every condition is decided.
type values struct {
	d deploy.Deployment
	// params are the parameters' values; nil: keep the references.
	params map[string]string
	// doc is what the evaluator reads: the parameters and the conditions.
	doc *yaml.Node
}

func (c *values) folding() bool { return c.params != nil }

// stack is the evaluation of the CDK app's rendering.
func (c *values) stack() StackValues { return StackValues{Parameters: c.params, Symbolic: true} }

// document is the parameters and the conditions as the evaluator reads
// them, written once.
func (c *values) document() (*yaml.Node, error) {
	if c.doc != nil {
		return c.doc, nil
	}
	raw := &values{d: c.d}
	params, conds := &Map{}, &Map{}
	for _, p := range c.d.Parameters {
		params.Set(p.Name, M("Type", "String"))
	}
	for _, n := range c.d.Conditions {
		cn, err := raw.condNode(n.Cond)
		if err != nil {
			return nil, err
		}
		conds.Set(n.Name, cn)
	}
	c.doc = node(M("Parameters", params, "Conditions", conds), 0)
	return c.doc, nil
}

// node converts v; a decided AWS::NoValue is noValue{}.
func (c *values) node(v deploy.Value) (any, error) {
	n, err := (&values{d: c.d}).raw(v)
	if err != nil || !c.folding() {
		return n, err
	}
	doc, err := c.document()
	if err != nil {
		return nil, err
	}
	out, err := Eval(doc, node(n, 0), c.stack())
	if err != nil {
		return nil, err
	}
	return unref(out)
}

// unref is a symbolic evaluation's result as a node: a literal, or the
// references it holds for CloudFormation.
func unref(v any) (any, error) {
	switch x := v.(type) {
	case string:
		if !strings.Contains(strings.ReplaceAll(x, "${!", ""), "${") {
			return strings.ReplaceAll(x, "${!", "${"), nil
		}
		if m := soleRef.FindStringSubmatch(x); m != nil {
			if id, attr, ok := strings.Cut(m[1], "."); ok && !strings.HasPrefix(m[1], "AWS::") {
				return Fn{"Fn::GetAtt", id + "." + attr}, nil
			}
			return Fn{"Ref", m[1]}, nil
		}
		return Fn{"Fn::Sub", x}, nil
	case []any:
		out := Seq{}
		for _, e := range x {
			n, err := unref(e)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
		return out, nil
	}
	if v == NoValue {
		return noValue{}, nil
	}
	return nil, fmt.Errorf("cfn: a value of type %T", v)
}

// soleRef is a value that is one reference and nothing else.
var soleRef = regexp.MustCompile(`^\$\{([^!}][^}]*)\}$`)

// raw converts v as template.yaml writes it.
func (c *values) raw(v deploy.Value) (any, error) {
	switch v.Op {
	case "":
		return v.Lit, nil
	case "AWS::NoValue":
		return Fn{"Ref", "AWS::NoValue"}, nil
	case "Ref":
		return Fn{"Ref", v.Lit}, nil
	case "Fn::GetAtt":
		return Fn{"Fn::GetAtt", v.Lit}, nil
	case "Fn::Sub":
		return Fn{"Fn::Sub", v.Lit}, nil
	case "Fn::If":
		a, err := c.raw(v.Args[0])
		if err != nil {
			return nil, err
		}
		b, err := c.raw(v.Args[1])
		if err != nil {
			return nil, err
		}
		return Fn{"Fn::If", Seq{v.Lit, a, b}}, nil
	case "Fn::Join":
		parts := Seq{}
		for _, a := range v.Args {
			n, err := c.raw(a)
			if err != nil {
				return nil, err
			}
			parts = append(parts, n)
		}
		return Fn{"Fn::Join", Seq{v.Lit, parts}}, nil
	case "Fn::Split":
		n, err := c.raw(v.Args[0])
		if err != nil {
			return nil, err
		}
		return Fn{"Fn::Split", Seq{v.Lit, n}}, nil
	case "Fn::Select":
		n, err := c.raw(v.Args[0])
		if err != nil {
			return nil, err
		}
		return Fn{"Fn::Select", Seq{v.Lit, n}}, nil
	}
	return nil, fmt.Errorf("cfn: no rendering of %s", v.Op)
}

// subVar is a ${Name} of a Fn::Sub template (not a ${!Literal}).
var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

// cond decides a condition from the parameters' values, by the one
// evaluator.
func (c *values) cond(x deploy.Cond) (bool, error) {
	doc, err := c.document()
	if err != nil {
		return false, err
	}
	n, err := (&values{d: c.d}).condNode(x)
	if err != nil {
		return false, err
	}
	return EvalCondition(doc, node(n, 0), c.stack())
}

// condNode writes a condition for template.yaml.
func (c *values) condNode(x deploy.Cond) (any, error) {
	switch x.Op {
	case "Condition":
		return Fn{"Condition", x.Name}, nil
	case "Fn::Equals":
		a, err := c.node(x.Values[0])
		if err != nil {
			return nil, err
		}
		b, err := c.node(x.Values[1])
		if err != nil {
			return nil, err
		}
		return Fn{"Fn::Equals", Seq{a, b}}, nil
	}
	var args Seq
	for _, sub := range x.Conds {
		n, err := c.condNode(sub)
		if err != nil {
			return nil, err
		}
		args = append(args, n)
	}
	return Fn{x.Op, args}, nil
}
