package deploy

// Value is a value CloudFormation computes when it deploys: a literal, a
// reference to a parameter, a pseudo parameter or a resource, or an
// intrinsic function of other values. The description writes every
// environment variable, IAM resource and output as a Value; each rendering
// writes it in its template's terms (internal/deploy/cfn): template.yaml
// keeps references to parameters, the CDK app's template has them
// replaced by the context's values.
type Value struct {
	// Op is the intrinsic function ("Ref", "Fn::GetAtt", "Fn::Join",
	// "Fn::Sub", "Fn::If", "Fn::Select", "Fn::Split"), "" for a literal and
	// "AWS::NoValue" for the absence of a value.
	Op string
	// Lit is a literal's text, and the name, separator or template of the
	// other operations (Ref's name, GetAtt's "Id.Attr", Join's and Split's
	// separator, Sub's template, If's condition, Select's index).
	Lit  string
	Args []Value
}

// Lit is a literal.
func Lit(s string) Value { return Value{Lit: s} }

// Ref is a parameter's value, a pseudo parameter's (AWS::Region…), or what
// a resource's Ref returns (a table's name, a queue's URL, a secret's ARN).
func Ref(name string) Value { return Value{Op: "Ref", Lit: name} }

// GetAtt is an attribute of a resource (Arn, QueueName, ApiEndpoint).
func GetAtt(id, attr string) Value { return Value{Op: "Fn::GetAtt", Lit: id + "." + attr} }

// Join joins parts with sep.
func Join(sep string, parts ...Value) Value { return Value{Op: "Fn::Join", Lit: sep, Args: parts} }

// Sub is CloudFormation's ${Name} and ${Id.Attr} substitution in template.
func Sub(template string) Value { return Value{Op: "Fn::Sub", Lit: template} }

// If is then when the named condition holds, otherwise els.
func If(cond string, then, els Value) Value {
	return Value{Op: "Fn::If", Lit: cond, Args: []Value{then, els}}
}

// NoValue removes the property (an environment variable, an IAM
// statement) it is the value of.
func NoValue() Value { return Value{Op: "AWS::NoValue"} }

// Select is the index'th element of the list list.
func Select(index string, list Value) Value {
	return Value{Op: "Fn::Select", Lit: index, Args: []Value{list}}
}

// Split is v split at every sep, a list.
func Split(sep string, v Value) Value { return Value{Op: "Fn::Split", Lit: sep, Args: []Value{v}} }

// IsLiteral reports whether v is a literal, and its text.
func (v Value) IsLiteral() (string, bool) { return v.Lit, v.Op == "" }

// Cond is a condition over the parameters, in CloudFormation's condition
// functions: Equals of two values, Not, Or and And of conditions, and a
// named condition.
type Cond struct {
	// Op is "Fn::Equals", "Fn::Not", "Fn::Or", "Fn::And" or "Condition".
	Op string
	// Values are Equals' two operands; Conds the others' operands.
	Values []Value
	Conds  []Cond
	// Name is a named condition's.
	Name string
}

// Equals holds when a and b are equal.
func Equals(a, b Value) Cond { return Cond{Op: "Fn::Equals", Values: []Value{a, b}} }

// Not holds when c does not.
func Not(c Cond) Cond { return Cond{Op: "Fn::Not", Conds: []Cond{c}} }

// Or holds when any of cs does (CloudFormation takes 2 to 10).
func Or(cs ...Cond) Cond { return Cond{Op: "Fn::Or", Conds: cs} }

// Condition is the named condition's value.
func Condition(name string) Cond { return Cond{Op: "Condition", Name: name} }

// NamedCondition is a condition of the template, by name, which values
// (Fn::If) and resources refer to.
type NamedCondition struct {
	Name string
	Cond Cond
}

// Rule is a check CloudFormation makes of the parameters before it
// deploys (template.yaml's Rules) and the CDK app at synth: when When
// holds, Assert must, or the deploy fails with Message.
type Rule struct {
	Name    string
	When    Cond
	Assert  Cond
	Message string
}
