package main

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
)

// deployment is what the cost of a review depends on in the CDK app
// (infra/, its own Go module): each function's memory size, the payload
// bucket's expiry and the API's access log line. The bench reads them
// from the app's source, so the app stays their one source of truth.
type deployment struct {
	MemoryMB          map[string]int // by function name
	PayloadExpiryDays int
	AccessLogFormat   string
}

// readDeployment parses infra/stack.go and infra/names.go under root.
func readDeployment(root string) (deployment, error) {
	fset := token.NewFileSet()
	consts := map[string]constant.Value{}
	var specs *ast.CompositeLit
	for _, name := range []string{"names.go", "stack.go"} {
		f, err := parser.ParseFile(fset, filepath.Join(root, "infra", name), nil, 0)
		if err != nil {
			return deployment{}, fmt.Errorf("read the CDK app: %w", err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range gd.Specs {
				vs, ok := s.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					if gd.Tok == token.CONST {
						if v := evalConst(vs.Values[i], consts); v != nil {
							consts[n.Name] = v
						}
					}
					if n.Name == "functionSpecs" {
						specs, _ = vs.Values[i].(*ast.CompositeLit)
					}
				}
			}
		}
	}
	if specs == nil {
		return deployment{}, fmt.Errorf("infra/stack.go: no functionSpecs")
	}
	d := deployment{MemoryMB: map[string]int{}}
	for _, e := range specs.Elts {
		lit, ok := e.(*ast.CompositeLit)
		if !ok {
			continue
		}
		var name string
		var mem int
		for _, kv := range lit.Elts {
			kv, ok := kv.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			key, _ := kv.Key.(*ast.Ident)
			v := evalConst(kv.Value, consts)
			if key == nil || v == nil {
				continue
			}
			switch key.Name {
			case "Name":
				name = constant.StringVal(v)
			case "Memory":
				n, _ := constant.Int64Val(constant.ToInt(v))
				mem = int(n)
			}
		}
		if name == "" || mem <= 0 {
			return deployment{}, fmt.Errorf("infra/stack.go: a function spec without a name or a memory size")
		}
		d.MemoryMB[name] = mem
	}
	if v, ok := consts["PayloadExpiryDays"]; ok {
		n, _ := constant.Int64Val(constant.ToInt(v))
		d.PayloadExpiryDays = int(n)
	}
	if v, ok := consts["accessLogFormat"]; ok {
		d.AccessLogFormat = constant.StringVal(v)
	}
	if d.PayloadExpiryDays <= 0 || d.AccessLogFormat == "" {
		return deployment{}, fmt.Errorf("infra/stack.go: no PayloadExpiryDays or accessLogFormat")
	}
	return d, nil
}

// evalConst evaluates a constant expression of literals, known constants
// and + (the forms the CDK app's constants take); nil if it cannot.
func evalConst(e ast.Expr, consts map[string]constant.Value) constant.Value {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			s, err := strconv.Unquote(x.Value)
			if err != nil {
				return nil
			}
			return constant.MakeString(s)
		}
		return constant.MakeFromLiteral(x.Value, x.Kind, 0)
	case *ast.Ident:
		return consts[x.Name]
	case *ast.ParenExpr:
		return evalConst(x.X, consts)
	case *ast.BinaryExpr:
		a, b := evalConst(x.X, consts), evalConst(x.Y, consts)
		if a == nil || b == nil {
			return nil
		}
		if a.Kind() == constant.String && x.Op == token.ADD {
			return constant.MakeString(constant.StringVal(a) + constant.StringVal(b))
		}
		if a.Kind() != constant.String && b.Kind() != constant.String {
			return constant.BinaryOp(a, x.Op, b)
		}
	}
	return nil
}
