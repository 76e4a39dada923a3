package cfn

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/criticizer/criticizer/internal/deploy"
)

// noValue is AWS::NoValue once a rendering has decided it: the key or the
// element holding it is left out.
type noValue struct{}

// values converts the description's Values to tree nodes. With params
// (the CDK app's rendering), a reference to a parameter is its value and
// conditions are decided; otherwise (template.yaml) both stay for
// CloudFormation.
type values struct {
	d deploy.Deployment
	// params are the parameters' values; nil: keep the references.
	params map[string]string
	conds  map[string]bool
}

func (c *values) folding() bool { return c.params != nil }

// isParam reports whether name is a parameter.
func (c *values) isParam(name string) bool {
	_, ok := c.d.Param(name)
	return ok
}

// node converts v; a decided AWS::NoValue is noValue{}.
func (c *values) node(v deploy.Value) (any, error) {
	switch v.Op {
	case "":
		return v.Lit, nil
	case "AWS::NoValue":
		if c.folding() {
			return noValue{}, nil
		}
		return Fn{"Ref", "AWS::NoValue"}, nil
	case "Ref":
		if c.folding() && c.isParam(v.Lit) {
			return c.params[v.Lit], nil
		}
		return Fn{"Ref", v.Lit}, nil
	case "Fn::GetAtt":
		return Fn{"Fn::GetAtt", v.Lit}, nil
	case "Fn::Sub":
		if !c.folding() {
			return Fn{"Fn::Sub", v.Lit}, nil
		}
		return c.sub(v.Lit)
	case "Fn::If":
		if c.folding() {
			on, err := c.cond(deploy.Condition(v.Lit))
			if err != nil {
				return nil, err
			}
			if on {
				return c.node(v.Args[0])
			}
			return c.node(v.Args[1])
		}
		a, err := c.node(v.Args[0])
		if err != nil {
			return nil, err
		}
		b, err := c.node(v.Args[1])
		if err != nil {
			return nil, err
		}
		return Fn{"Fn::If", Seq{v.Lit, a, b}}, nil
	case "Fn::Join":
		parts := Seq{}
		for _, a := range v.Args {
			n, err := c.node(a)
			if err != nil {
				return nil, err
			}
			if _, none := n.(noValue); none {
				continue
			}
			// Adjacent literals are one.
			if s, ok := n.(string); ok && c.folding() && len(parts) > 0 {
				if prev, ok := parts[len(parts)-1].(string); ok && v.Lit == "" {
					parts[len(parts)-1] = prev + s
					continue
				}
			}
			parts = append(parts, n)
		}
		if c.folding() {
			if s, ok := literals(parts); ok {
				return strings.Join(s, v.Lit), nil
			}
		}
		return Fn{"Fn::Join", Seq{v.Lit, parts}}, nil
	case "Fn::Split":
		n, err := c.node(v.Args[0])
		if err != nil {
			return nil, err
		}
		if s, ok := n.(string); ok && c.folding() {
			var out Seq
			for _, p := range strings.Split(s, v.Lit) {
				out = append(out, p)
			}
			return out, nil
		}
		return Fn{"Fn::Split", Seq{v.Lit, n}}, nil
	case "Fn::Select":
		n, err := c.node(v.Args[0])
		if err != nil {
			return nil, err
		}
		if l, ok := n.(Seq); ok && c.folding() {
			i, err := strconv.Atoi(v.Lit)
			if err != nil || i < 0 || i >= len(l) {
				return nil, fmt.Errorf("Fn::Select %s of a list of %d", v.Lit, len(l))
			}
			return l[i], nil
		}
		return Fn{"Fn::Select", Seq{v.Lit, n}}, nil
	}
	return nil, fmt.Errorf("cfn: no rendering of %s", v.Op)
}

// literals is parts' text when every part is a literal.
func literals(parts Seq) ([]string, bool) {
	out := make([]string, len(parts))
	for i, p := range parts {
		s, ok := p.(string)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

// sub replaces the parameters of Sub template tmpl by their values; what
// remains (resources, pseudo parameters) stays a Sub, or the text when
// nothing does.
func (c *values) sub(tmpl string) (any, error) {
	refs := false
	out := subVar.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := m[2 : len(m)-1]
		if c.isParam(name) {
			return strings.ReplaceAll(c.params[name], "${", "${!")
		}
		refs = true
		return m
	})
	if !refs {
		return strings.ReplaceAll(out, "${!", "${"), nil
	}
	return Fn{"Fn::Sub", out}, nil
}

// cond decides a condition from the parameters' values.
func (c *values) cond(x deploy.Cond) (bool, error) {
	switch x.Op {
	case "Condition":
		if v, ok := c.conds[x.Name]; ok {
			return v, nil
		}
		for _, n := range c.d.Conditions {
			if n.Name == x.Name {
				v, err := c.cond(n.Cond)
				if err != nil {
					return false, err
				}
				c.conds[x.Name] = v
				return v, nil
			}
		}
		return false, fmt.Errorf("cfn: no condition %s", x.Name)
	case "Fn::Equals":
		a, err := c.node(x.Values[0])
		if err != nil {
			return false, err
		}
		b, err := c.node(x.Values[1])
		if err != nil {
			return false, err
		}
		as, aok := a.(string)
		bs, bok := b.(string)
		if !aok || !bok {
			return false, fmt.Errorf("cfn: Fn::Equals of values known only at deploy")
		}
		return as == bs, nil
	case "Fn::Not":
		v, err := c.cond(x.Conds[0])
		return !v, err
	case "Fn::And", "Fn::Or":
		and := x.Op == "Fn::And"
		for _, sub := range x.Conds {
			v, err := c.cond(sub)
			if err != nil {
				return false, err
			}
			if v != and {
				return v, nil
			}
		}
		return and, nil
	}
	return false, fmt.Errorf("cfn: no condition function %s", x.Op)
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
