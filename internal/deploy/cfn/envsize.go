package cfn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/criticizer/criticizer/internal/deploy"
)

// LambdaEnvLimit is Lambda's limit on a function's environment variables:
// "4 KB, for all environment variables associated with the function, in
// aggregate" (Lambda quotas; "the total size of all environment variables
// doesn't exceed 4 KB", Using Lambda environment variables). The service
// measures the variables as one JSON object: its refusal quotes the
// "String measured: {"KEY":"value",…}" (github-aws-runners/
// terraform-aws-github-runner#3594). So the size here is that object's
// bytes — every key and value with its quotes, colon and comma, a value's
// quotes, backslashes and control characters escaped — which is never less
// than the sum of len(key)+len(value) (cfn-lint's E3697). An environment
// over it fails the deploy (InvalidParameterValueException) after every
// resource before the function was created (R-LIMIT-1).
const LambdaEnvLimit = 4096

// The longest value CloudFormation can fill in for a reference, by what the
// reference returns. A function's environment is sized with these, not
// with today's names: a stack name, a region or a generated suffix must not
// decide whether a deploy works.
const (
	// maxStackName: "A stack name can contain only alphanumeric characters
	// (case-sensitive) and hyphens … no longer than 128 characters"
	// (CloudFormation, CreateStack StackName).
	maxStackName = 128
	// maxTableName: DynamoDB table names are 3 to 255 characters (DynamoDB
	// naming rules); Ref of a table is its name.
	maxTableName = 255
	// maxBucketName: S3 bucket names are 3 to 63 characters (bucket naming
	// rules); Ref of a bucket is its name.
	maxBucketName = 63
	// maxQueueName: "A queue name can have up to 80 characters" (SQS
	// quotas; CreateQueue QueueName).
	maxQueueName = 80
	// maxSecretName: a secret's name is at most 512 characters (Secrets
	// Manager quotas; CreateSecret Name); its ARN adds "-" and 6 random
	// characters.
	maxSecretName = 512
	// maxConfigurationSetName: SES configuration set names are at most 64
	// characters (CreateConfigurationSet ConfigurationSetName).
	maxConfigurationSetName = 64
	// maxAPIID: an API Gateway API id is 10 characters (the host of
	// https://{api-id}.execute-api.{region}.amazonaws.com).
	maxAPIID = 10
	// maxAccountID: 12 digits.
	maxAccountID = 12
	// AWS documents no maximum for these; the longest today are 14
	// ("ap-southeast-5", "us-isob-east-1"), 10 ("aws-us-gov") and 16
	// ("amazonaws.com.cn") characters. The bounds leave room for new ones.
	maxRegion    = 25
	maxPartition = 16
	maxURLSuffix = 25
)

// The longest value of each reference CloudFormation fills in.
const (
	// maxQueueURL: https://sqs.{region}.{url suffix}/{account}/{queue name}.
	maxQueueURL = len("https://sqs.") + maxRegion + len(".") + maxURLSuffix + len("/") + maxAccountID + len("/") + maxQueueName
	// maxQueueARN: arn:{partition}:sqs:{region}:{account}:{queue name}.
	maxQueueARN = len("arn:") + maxPartition + len(":sqs:") + maxRegion + len(":") + maxAccountID + len(":") + maxQueueName
	// maxSecretARN: arn:{partition}:secretsmanager:{region}:{account}:secret:{name}-{6 characters}.
	maxSecretARN    = secretARNPrefix + maxSecretName + len("-XXXXXX")
	secretARNPrefix = len("arn:") + maxPartition + len(":secretsmanager:") + maxRegion + len(":") + maxAccountID + len(":secret:")
	// maxTableARN: arn:{partition}:dynamodb:{region}:{account}:table/{name}.
	maxTableARN = len("arn:") + maxPartition + len(":dynamodb:") + maxRegion + len(":") + maxAccountID + len(":table/") + maxTableName
	// maxBucketARN: arn:{partition}:s3:::{bucket}.
	maxBucketARN = len("arn:") + maxPartition + len(":s3:::") + maxBucketName
	// maxAPIEndpoint: https://{api id}.execute-api.{region}.{url suffix}.
	maxAPIEndpoint = len("https://") + maxAPIID + len(".execute-api.") + maxRegion + len(".") + maxURLSuffix
)

// generatedSecretARN is the longest ARN of the secret with logical id id
// when the template gives it no Name: CloudFormation then names it after
// the logical id with a hyphen and 12 random characters (AWS's example:
// CloudFormationCreatedSecret-a1b2c3d4e5f6, "Create an AWS Secrets
// Manager secret with CloudFormation"). It is sized with the stack's
// name and a hyphen in front as well, as CloudFormation names most
// resources, so a name made either way fits; a named secret is sized at
// Secrets Manager's maximum (maxSecretARN). Why it matters: notify reads
// two secrets (R-DEPLOY-5), and two ARNs at 512-character names would
// take a third of its 4 KB.
func generatedSecretARN(id string) int {
	return min(maxSecretARN, secretARNPrefix+maxStackName+len("-")+len(id)+len("-")+12+len("-XXXXXX"))
}

// refMax is the longest value of Ref to a resource of type typ, or of the
// pseudo parameter name; false when there is no bound.
func refMax(name, typ string) (int, bool) {
	switch name {
	case "AWS::Region":
		return maxRegion, true
	case "AWS::Partition":
		return maxPartition, true
	case "AWS::URLSuffix":
		return maxURLSuffix, true
	case "AWS::AccountId":
		return maxAccountID, true
	case "AWS::StackName":
		return maxStackName, true
	}
	switch typ {
	case "AWS::DynamoDB::Table":
		return maxTableName, true
	case "AWS::S3::Bucket":
		return maxBucketName, true
	case "AWS::SQS::Queue":
		return maxQueueURL, true
	case "AWS::SecretsManager::Secret":
		return maxSecretARN, true
	case "AWS::SES::ConfigurationSet":
		return maxConfigurationSetName, true
	case "AWS::ApiGatewayV2::Api", "AWS::Serverless::HttpApi":
		return maxAPIID, true
	}
	return 0, false
}

// getAttMax is the longest value of Fn::GetAtt of attribute attr of a
// resource of type typ; false when there is no bound.
func getAttMax(typ, attr string) (int, bool) {
	switch typ + "." + attr {
	case "AWS::SQS::Queue.Arn":
		return maxQueueARN, true
	case "AWS::SQS::Queue.QueueName":
		return maxQueueName, true
	case "AWS::SQS::Queue.QueueUrl":
		return maxQueueURL, true
	case "AWS::DynamoDB::Table.Arn":
		return maxTableARN, true
	case "AWS::S3::Bucket.Arn":
		return maxBucketARN, true
	case "AWS::ApiGatewayV2::Api.ApiEndpoint":
		return maxAPIEndpoint, true
	}
	return 0, false
}

// EnvSize is one function's environment, sized.
type EnvSize struct {
	Function string
	// Bytes is the JSON object's size at the longest every reference can be.
	Bytes int
	// Biggest is the variable that takes the most of it, and its bytes
	// (key and value, as they count in the object).
	Biggest      string
	BiggestBytes int
}

// jsonStringLen is the bytes s takes inside a JSON string's quotes: what
// Lambda measures (quotes, backslashes and control characters escaped,
// the rest as UTF-8).
func jsonStringLen(s string) int {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return len(s) * 6
	}
	return b.Len() - len(`""`) - len("\n")
}

// EnvironmentSizes sizes every function's environment in template t as
// Lambda will measure it once deployed: literals as they are, every
// reference CloudFormation fills in at the longest AWS allows, and each
// parameter (template.yaml's) at params' bound; a condition is decided
// by conds when it names it, else both branches are sized and the longer
// counts. The order is the template's. The values are those of the one
// evaluator (Eval), in a stack whose every reference is a string of its
// longest length: the sizing cannot differ from what is evaluated.
func EnvironmentSizes(t *Template, params map[string]int, conds map[string]bool) ([]EnvSize, error) {
	doc := node(t.root, 0)
	x := func(n int) string { return strings.Repeat("x", n) }
	s := StackValues{StackName: x(maxStackName), Region: x(maxRegion), AccountID: x(maxAccountID), Partition: x(maxPartition),
		URLSuffix: x(maxURLSuffix), Parameters: map[string]string{}, Resources: map[string]BoundResource{}}
	res := t.Resources()
	types := map[string]string{}
	for _, id := range res.Keys() {
		typ, _ := res.Get(id).(*Map).Get("Type").(string)
		types[id] = typ
		b := BoundResource{Attrs: map[string]string{}}
		if n, ok := refMax("", typ); ok {
			b.Ref = x(n)
		}
		if typ == "AWS::SecretsManager::Secret" {
			if props, _ := res.Get(id).(*Map).Get("Properties").(*Map); props == nil || props.Get("Name") == nil {
				b.Ref = x(generatedSecretARN(id))
			}
		}
		for _, attr := range []string{"Arn", "QueueName", "QueueUrl", "ApiEndpoint"} {
			if n, ok := getAttMax(typ, attr); ok {
				b.Attrs[attr] = x(n)
			}
		}
		s.Resources[id] = b
	}
	for name, n := range params {
		s.Parameters[name] = paramAt(doc, name, n)
	}
	// SAM's Globals set only LocalStackHost's variables, absent when
	// deployed: they are not sized.
	var out []EnvSize
	for _, id := range res.Keys() {
		if typ := types[id]; typ != "AWS::Lambda::Function" && typ != "AWS::Serverless::Function" {
			continue
		}
		sz := EnvSize{Function: id, Bytes: len("{}")}
		vars := yamlPath(doc, "Resources", id, "Properties", "Environment", "Variables")
		n := 0
		for i := 0; vars != nil && i+1 < len(vars.Content); i += 2 {
			k := vars.Content[i].Value
			v, present, err := longest(doc, vars.Content[i+1], s, conds)
			if err != nil {
				return nil, fmt.Errorf("function %s: %s: no bound: %w", id, k, err)
			}
			if !present {
				continue
			}
			kv := len(`"`) + jsonStringLen(k) + len(`":"`) + v + len(`"`)
			if n > 0 {
				sz.Bytes += len(",")
			}
			n++
			sz.Bytes += kv
			if kv > sz.BiggestBytes {
				sz.Biggest, sz.BiggestBytes = k, kv
			}
		}
		out = append(out, sz)
	}
	return out, nil
}

// paramAt is a value of parameter name taking n JSON bytes: its longest
// allowed value when it has a list of them, else n characters.
func paramAt(doc *yaml.Node, name string, n int) string {
	best := ""
	if allowed := yamlPath(doc, "Parameters", name, "AllowedValues"); allowed != nil {
		for _, a := range allowed.Content {
			if jsonStringLen(a.Value) > jsonStringLen(best) {
				best = a.Value
			}
		}
		return best
	}
	return strings.Repeat("x", n)
}

// longest is the most JSON bytes value v can take (escaped, without its
// quotes) and whether it can be present at all (AWS::NoValue drops the
// key): evaluated under every choice of the conditions its Fn::Ifs name
// that conds does not decide.
func longest(doc, v *yaml.Node, s StackValues, conds map[string]bool) (int, bool, error) {
	var open []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if fn, arg, ok := intrinsic(n); ok && fn == "Fn::If" && arg.Kind == yaml.SequenceNode && len(arg.Content) == 3 {
			if _, decided := conds[arg.Content[0].Value]; !decided && !slices.Contains(open, arg.Content[0].Value) {
				open = append(open, arg.Content[0].Value)
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(v)
	most, present := 0, false
	for choice := range 1 << len(open) {
		s.Conditions = maps.Clone(conds)
		if s.Conditions == nil {
			s.Conditions = map[string]bool{}
		}
		for i, c := range open {
			s.Conditions[c] = choice&(1<<i) != 0
		}
		val, err := Eval(doc, v, s)
		if err != nil {
			return 0, false, err
		}
		if val == NoValue {
			continue
		}
		str, ok := val.(string)
		if !ok {
			return 0, false, fmt.Errorf("not a string")
		}
		most, present = max(most, jsonStringLen(str)), true
	}
	return most, present, nil
}

// ParamBounds are the most JSON bytes each parameter's value can take
// (deploy.Param.MaxJSONBytes), for sizing template.yaml.
func ParamBounds(d deploy.Deployment) map[string]int {
	out := map[string]int{}
	for _, p := range d.Parameters {
		out[p.Name] = p.MaxJSONBytes()
	}
	return out
}

// CheckEnvironments refuses sizes over LambdaEnvLimit, naming the
// function and the variable that takes the most of it (R-LIMIT-1).
func CheckEnvironments(sizes []EnvSize) error {
	for _, sz := range sizes {
		if sz.Bytes > LambdaEnvLimit {
			return fmt.Errorf("function %s: its environment can reach %d bytes once deployed, over Lambda's %d-byte limit "+
				"(every table, queue and secret name sized at AWS's maximum); the biggest variable is %s (%d bytes): shorten it",
				sz.Function, sz.Bytes, LambdaEnvLimit, sz.Biggest, sz.BiggestBytes)
		}
	}
	return nil
}
