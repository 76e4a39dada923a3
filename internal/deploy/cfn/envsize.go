package cfn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

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
	maxSecretARN = len("arn:") + maxPartition + len(":secretsmanager:") + maxRegion + len(":") + maxAccountID +
		len(":secret:") + maxSecretName + len("-XXXXXX")
	// maxTableARN: arn:{partition}:dynamodb:{region}:{account}:table/{name}.
	maxTableARN = len("arn:") + maxPartition + len(":dynamodb:") + maxRegion + len(":") + maxAccountID + len(":table/") + maxTableName
	// maxBucketARN: arn:{partition}:s3:::{bucket}.
	maxBucketARN = len("arn:") + maxPartition + len(":s3:::") + maxBucketName
	// maxAPIEndpoint: https://{api id}.execute-api.{region}.{url suffix}.
	maxAPIEndpoint = len("https://") + maxAPIID + len(".execute-api.") + maxRegion + len(".") + maxURLSuffix
)

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

// envBounds sizes a function's environment as Lambda will measure it once
// deployed, from the template's values: literals as they are, references
// at the longest value AWS allows them.
type envBounds struct {
	// types maps each logical id to its resource type.
	types map[string]string
	// params bounds the template's parameters (SAM), by name.
	params map[string]int
	// conds, when it holds a condition, decides that condition's Fn::If;
	// otherwise both branches are sized and the longer counts.
	conds map[string]bool
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

// size is the JSON object {"k":"v",…} of vars at its longest.
func (b envBounds) size(fn string, vars map[string]any) (EnvSize, error) {
	out := EnvSize{Function: fn, Bytes: len("{}")}
	n := 0
	for _, k := range sortedMapKeys(vars) {
		v, present, err := b.maxLen(vars[k])
		if err != nil {
			return EnvSize{}, fmt.Errorf("function %s: %s: %w", fn, k, err)
		}
		if !present {
			continue
		}
		kv := len(`"`) + jsonStringLen(k) + len(`":"`) + v + len(`"`)
		if n > 0 {
			out.Bytes += len(",")
		}
		n++
		out.Bytes += kv
		if kv > out.BiggestBytes {
			out.Biggest, out.BiggestBytes = k, kv
		}
	}
	return out, nil
}

// maxLen is the longest the value v can be (JSON-escaped, without quotes)
// and whether it can be present at all (Ref AWS::NoValue drops the key).
func (b envBounds) maxLen(v any) (int, bool, error) {
	switch x := v.(type) {
	case string:
		return jsonStringLen(x), true, nil
	case float64, int, bool:
		return len(fmt.Sprint(x)), true, nil
	case map[string]any:
		if len(x) != 1 {
			break
		}
		for fn, arg := range x {
			switch fn {
			case "Ref":
				name, _ := arg.(string)
				return b.ref(name)
			case "Fn::GetAtt":
				l, _ := arg.([]any)
				if len(l) != 2 {
					break
				}
				id, _ := l[0].(string)
				attr, _ := l[1].(string)
				if n, ok := getAttMax(b.types[id], attr); ok {
					return n, true, nil
				}
				return 0, false, fmt.Errorf("no bound for Fn::GetAtt %s.%s (a %s)", id, attr, b.types[id])
			case "Fn::Join":
				l, _ := arg.([]any)
				if len(l) != 2 {
					break
				}
				sep, _ := l[0].(string)
				items, ok := l[1].([]any)
				if !ok {
					return 0, false, fmt.Errorf("no bound for Fn::Join of %v", l[1])
				}
				total := 0
				for i, it := range items {
					n, _, err := b.maxLen(it)
					if err != nil {
						return 0, false, err
					}
					if i > 0 {
						total += jsonStringLen(sep)
					}
					total += n
				}
				return total, true, nil
			case "Fn::Sub":
				tmpl, ok := arg.(string)
				if !ok {
					return 0, false, fmt.Errorf("no bound for Fn::Sub with variables")
				}
				total, last := 0, 0
				for _, m := range subVar.FindAllStringSubmatchIndex(tmpl, -1) {
					total += jsonStringLen(tmpl[last:m[0]])
					last = m[1]
					name := tmpl[m[2]:m[3]]
					var n int
					var err error
					if id, attr, dotted := strings.Cut(name, "."); dotted && b.types[id] != "" {
						n, _, err = b.maxLen(map[string]any{"Fn::GetAtt": []any{id, attr}})
					} else {
						n, _, err = b.ref(name)
					}
					if err != nil {
						return 0, false, err
					}
					total += n
				}
				return total + jsonStringLen(tmpl[last:]), true, nil
			case "Fn::If":
				l, _ := arg.([]any)
				if len(l) != 3 {
					break
				}
				if name, _ := l[0].(string); name != "" {
					if on, known := b.conds[name]; known && on {
						return b.maxLen(l[1])
					} else if known {
						return b.maxLen(l[2])
					}
				}
				a, aok, err := b.maxLen(l[1])
				if err != nil {
					return 0, false, err
				}
				c, cok, err := b.maxLen(l[2])
				if err != nil {
					return 0, false, err
				}
				return max(a, c), aok || cok, nil
			}
		}
	}
	return 0, false, fmt.Errorf("no bound for %v", v)
}

// ref bounds Ref name: a pseudo parameter, a parameter or a resource.
func (b envBounds) ref(name string) (int, bool, error) {
	if name == "AWS::NoValue" {
		return 0, false, nil
	}
	if n, ok := b.params[name]; ok {
		return n, true, nil
	}
	if n, ok := refMax(name, b.types[name]); ok {
		return n, true, nil
	}
	return 0, false, fmt.Errorf("no bound for Ref %s (a %q)", name, b.types[name])
}

func sortedMapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// EnvironmentSizes sizes every function's environment in template t as
// Lambda will measure it once deployed: literals as they are, every
// reference CloudFormation fills in at the longest AWS allows, and each
// parameter (template.yaml's) at params' bound; a condition is decided
// by conds when it names it, else both branches are sized and the longer
// counts. The order is the template's.
func EnvironmentSizes(t *Template, params map[string]int, conds map[string]bool) ([]EnvSize, error) {
	b := envBounds{types: map[string]string{}, params: params, conds: conds}
	res := t.Resources()
	for _, id := range res.Keys() {
		b.types[id], _ = res.Get(id).(*Map).Get("Type").(string)
	}
	// SAM's Globals set only LocalStackHost's variables, absent when
	// deployed: they are not sized.
	var out []EnvSize
	for _, id := range res.Keys() {
		r := res.Get(id).(*Map)
		if typ := b.types[id]; typ != "AWS::Lambda::Function" && typ != "AWS::Serverless::Function" {
			continue
		}
		env, _ := JSON(r.Get("Properties")).(map[string]any)["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		sz, err := b.size(id, vars)
		if err != nil {
			return nil, err
		}
		out = append(out, sz)
	}
	return out, nil
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
