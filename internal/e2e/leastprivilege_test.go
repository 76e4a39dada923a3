package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/mail"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/criticizer/criticizer/internal/awsclient"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/fault"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/testenv"
	"github.com/criticizer/criticizer/internal/webhook"
)

// Each function may do what its code does, on the resources it does it
// on: every AWS call each function made in a run through all of them
// (fault.Recorder, below the SDK, its event source's polling included,
// as Lambda polls with the function's role) is allowed by that
// function's IAM statements in the deployment's template (internal/deploy
// rendered, evaluated against the local stack's resources by the one
// evaluator the local stack uses), conditions on leading keys included.
// So removing a grant the code uses fails here, and no table restates
// what each function may do. The run is this test's own (one review to
// three readers, a reply, a permanent and a transient bounce, the status
// page, a sweep), inside the e2e package, so the calls checked are the
// same in every `make test`: what a function never does in it is not
// checked (its grants are logged, unused, with -v). What the template
// may not grant at all (wildcards, SES to any but notify) stays in
// internal/deploy/cfn's tests.
// Rules: R-DEPLOY-3.
func TestLeastPrivilege_EveryCallGranted(t *testing.T) {
	t.Parallel()
	rec := &fault.Recorder{}
	s := startStack(t, devstack.FunctionOptions{SMTP: "127.0.0.1:0",
		FunctionAWS: func(fn string) []awsclient.Option { return []awsclient.Option{rec.Option(fn)} }},
		func(c *config.Config) { c.InboundDomain = replyDomain })
	ctx := context.Background()
	cl := "least-privilege"
	ann, gone, full := "ann@example.com", "gone@example.com", "full@example.com"
	id := s.postVersion(cl, 1, reviewDiff(`	fmt.Println("total", sum)`, ""), ann, gone, full)
	s.replyTo(s.emailTo(cl, ann, 1), ann, "wrong 1")
	eventually(t, 30*time.Second, "the confirmation", func() bool { return len(s.confirmations(cl, ann)) == 1 })
	clKey := job.ChangelistKey("generic", cl)
	for _, b := range []struct{ to, kind string }{{gone, "Permanent"}, {full, "Transient"}} {
		row, err := s.fns.Deliveries.Get(ctx, delivery.ID(clKey, b.to, 1))
		if err != nil {
			t.Fatal(err)
		}
		ev := bounceEvent(t, row.ID, row.NotificationID, b.to, b.kind)
		if _, err := s.env.Clients.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(s.res.EventsTopicARN), Message: aws.String(ev)}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "full's v1 sent again after the transient bounce", func() bool {
		r, err := s.fns.Deliveries.Get(ctx, delivery.ID(clKey, full, 1))
		return err == nil && r.BounceResends == 1 && !r.NotifiedAt.IsZero()
	})
	if resp, err := http.Get(s.srv.URL + s.jobLink(id)); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status page: %v %v", resp, err)
	}
	if _, err := s.fns.Sweeper.Run(ctx); err != nil {
		t.Fatal(err)
	}

	everyCallGranted(t, s, rec, true)
}

// The code hosts' paths the run above does not take: a GitLab merge
// request whose reviewer is added after its version was mailed (fetch
// asks the host, reopens the job and sends it back to notify). Each call
// is granted as above.
// Rules: R-DEPLOY-3.
func TestLeastPrivilege_ReviewerAddedLaterGranted(t *testing.T) {
	t.Parallel()
	rec := &fault.Recorder{}
	domain := testenv.Prefix(t) + ".example.com"
	user1, user2 := "user1@"+domain, "user2@"+domain
	gl := newFakeReviewAPI(t)
	mr := "/api/v4/projects/gitlabhq%2Fgitlab-test/merge_requests/1"
	gl.gitlabVersion(t, mr, newHeadSHA)
	gl.on("GET "+mr, "application/json", readFile(t, sourceData+"gitlab/merge_request.json"))
	reviewersAre := func(names ...string) {
		var out []map[string]any
		for _, n := range names {
			out = append(out, map[string]any{"user": map[string]any{"username": n, "state": "active"}, "state": "unreviewed"})
		}
		b, _ := json.Marshal(out)
		gl.on("GET "+mr+"/reviewers", "application/json", b)
	}
	reviewersAre("user1")
	s := startStack(t, devstack.FunctionOptions{FunctionAWS: func(fn string) []awsclient.Option { return []awsclient.Option{rec.Option(fn)} }},
		func(c *config.Config) {
			c.GitLab = config.GitLab{WebhookToken: glToken, Token: "e2e-gitlab-api-token", APIURL: gl.srv.URL + "/api/v4"}
			c.ReviewerDirectory = `{"gitlab": {"user1": "` + user1 + `", "user2": "` + user2 + `"}}`
		})
	headers := func(uuid string) map[string]string {
		return map[string]string{webhook.GitLabTokenHeader: glToken, webhook.GitLabEventHeader: "Merge Request Hook", webhook.GitLabEventUUIDHeader: uuid}
	}
	clKey := job.ChangelistKey("gitlab", "gitlabhq/gitlab-test!1")
	resp, b := s.postHook("/webhooks/gitlab", headers("open-1"), readFile(t, webhookData+"gitlab/merge_request.open.json"))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("open: %d %s", resp.StatusCode, b)
	}
	v1 := decodeAccepted(t, b)
	s.settled(v1.JobID, delivery.ID(clKey, user1, 1))
	reviewersAre("user1", "user2")
	resp, b = s.postHook("/webhooks/gitlab", headers("update-reviewers-1"), readFile(t, webhookData+"gitlab/merge_request.update-reviewers.json"))
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(b), `"status":"reviewers_updated"`) {
		t.Fatalf("reviewer added: %d %s", resp.StatusCode, b)
	}
	s.settled(v1.JobID, delivery.ID(clKey, user2, 1))
	everyCallGranted(t, s, rec, false)
}

// everyCallGranted checks every call rec recorded against its function's
// IAM statements in the rendered template, evaluated against s's
// resources; with all, every function must have made one.
func everyCallGranted(t *testing.T, s *stack, rec *fault.Recorder, all bool) {
	t.Helper()
	tpl, err := devstack.DeployedTemplate()
	if err != nil {
		t.Fatal(err)
	}
	values, err := devstack.LocalStack(tpl, s.res, s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	calls := rec.Calls()
	for _, fn := range deploy.Describe().Names() {
		sts, err := tpl.Statements(deploy.FunctionID(fn), values)
		if err != nil {
			t.Fatal(err)
		}
		used, reported := map[int]bool{}, map[string]bool{}
		n := 0
		for _, c := range calls {
			if c.Function != fn {
				continue
			}
			n++
			for _, need := range required(t, c) {
				i := allowedBy(sts, need)
				if i < 0 {
					if msg := fmt.Sprintf("%s: %s (%s) is not granted to it", fn, need, c.Operation); !reported[msg] {
						reported[msg] = true
						t.Error(msg)
					}
					continue
				}
				used[i] = true
			}
		}
		if n == 0 && all {
			t.Errorf("%s made no AWS call in the run: it is not exercised", fn)
		}
		for i, st := range sts {
			if !used[i] && !strings.HasPrefix(fmt.Sprint(st["Action"]), "[logs:") {
				t.Logf("%s: granted, not used in this run: %v on %v", fn, st["Action"], st["Resource"])
			}
		}
	}
}

// need is one permission a call needs: an IAM action on a resource ARN,
// and, for an item of a table, its partition key (dynamodb:LeadingKeys).
// anyOf, when set, are alternative resources, any of which will do (the
// identity SES authorizes a send by: the address's or its domain's).
type need struct {
	action, resource string
	anyOf            []string
	leadingKeys      []string
}

func (n need) String() string {
	r := n.resource
	if len(n.anyOf) > 0 {
		r = strings.Join(n.anyOf, " or ")
	}
	if len(n.leadingKeys) > 0 {
		return fmt.Sprintf("%s on %s, keys %v", n.action, r, n.leadingKeys)
	}
	return n.action + " on " + r
}

// required is what IAM checks for call c, by the service's authorization
// reference: DynamoDB's transactions by each item's own action,
// SQS's and S3's batch and head operations by the action they are a form
// of, SES's send by the identity and the configuration set.
func required(t *testing.T, c fault.Call) []need {
	t.Helper()
	arn := func(service, res string) string {
		return fmt.Sprintf("arn:aws:%s:%s:%s:%s", service, devstack.LocalRegion, devstack.LocalAccount, res)
	}
	table := func(name *string) string { return arn("dynamodb", "table/"+aws.ToString(name)) }
	switch in := c.Input.(type) {
	case *dynamodb.GetItemInput:
		return []need{{action: "dynamodb:GetItem", resource: table(in.TableName), leadingKeys: keys(in.Key)}}
	case *dynamodb.PutItemInput:
		return []need{{action: "dynamodb:PutItem", resource: table(in.TableName), leadingKeys: keys(in.Item)}}
	case *dynamodb.UpdateItemInput:
		return []need{{action: "dynamodb:UpdateItem", resource: table(in.TableName), leadingKeys: keys(in.Key)}}
	case *dynamodb.DeleteItemInput:
		return []need{{action: "dynamodb:DeleteItem", resource: table(in.TableName), leadingKeys: keys(in.Key)}}
	case *dynamodb.QueryInput:
		r := table(in.TableName)
		if in.IndexName != nil {
			r += "/index/" + *in.IndexName
		}
		return []need{{action: "dynamodb:Query", resource: r}}
	case *dynamodb.ScanInput:
		return []need{{action: "dynamodb:Scan", resource: table(in.TableName)}}
	case *dynamodb.BatchGetItemInput:
		var out []need
		for name, ka := range in.RequestItems {
			var ks []string
			for _, k := range ka.Keys {
				ks = append(ks, keys(k)...)
			}
			out = append(out, need{action: "dynamodb:BatchGetItem", resource: table(&name), leadingKeys: ks})
		}
		return out
	case *dynamodb.BatchWriteItemInput:
		var out []need
		for name, ws := range in.RequestItems {
			var ks []string
			for _, w := range ws {
				if w.PutRequest != nil {
					ks = append(ks, keys(w.PutRequest.Item)...)
				}
				if w.DeleteRequest != nil {
					ks = append(ks, keys(w.DeleteRequest.Key)...)
				}
			}
			out = append(out, need{action: "dynamodb:BatchWriteItem", resource: table(&name), leadingKeys: ks})
		}
		return out
	case *dynamodb.TransactWriteItemsInput:
		var out []need
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				out = append(out, need{action: "dynamodb:PutItem", resource: table(it.Put.TableName), leadingKeys: keys(it.Put.Item)})
			case it.Update != nil:
				out = append(out, need{action: "dynamodb:UpdateItem", resource: table(it.Update.TableName), leadingKeys: keys(it.Update.Key)})
			case it.Delete != nil:
				out = append(out, need{action: "dynamodb:DeleteItem", resource: table(it.Delete.TableName), leadingKeys: keys(it.Delete.Key)})
			case it.ConditionCheck != nil:
				out = append(out, need{action: "dynamodb:ConditionCheckItem", resource: table(it.ConditionCheck.TableName), leadingKeys: keys(it.ConditionCheck.Key)})
			}
		}
		return out
	case *dynamodb.TransactGetItemsInput:
		var out []need
		for _, it := range in.TransactItems {
			out = append(out, need{action: "dynamodb:GetItem", resource: table(it.Get.TableName), leadingKeys: keys(it.Get.Key)})
		}
		return out
	case *sesv2.SendEmailInput:
		from, err := mail.ParseAddress(aws.ToString(in.FromEmailAddress))
		if err != nil {
			t.Fatalf("SendEmail from %q: %v", aws.ToString(in.FromEmailAddress), err)
		}
		_, domain, _ := strings.Cut(from.Address, "@")
		out := []need{{action: "ses:SendEmail", anyOf: []string{arn("ses", "identity/"+from.Address), arn("ses", "identity/"+domain)}}}
		if in.ConfigurationSetName != nil {
			out = append(out, need{action: "ses:SendEmail", resource: arn("ses", "configuration-set/"+*in.ConfigurationSetName)})
		}
		return out
	case *sesv2.GetAccountInput:
		return []need{{action: "ses:GetAccount", resource: "*"}}
	}
	v := reflect.Indirect(reflect.ValueOf(c.Input))
	field := func(name string) string {
		if v.Kind() != reflect.Struct {
			return ""
		}
		if f := v.FieldByName(name); f.IsValid() && f.Kind() == reflect.Pointer && !f.IsNil() {
			return fmt.Sprint(f.Elem().Interface())
		}
		return ""
	}
	switch c.Service {
	case "SQS":
		// The batch forms are authorized as the single ones.
		action := "sqs:" + strings.TrimSuffix(c.Operation, "Batch")
		if u := field("QueueUrl"); u != "" {
			return []need{{action: action, resource: arn("sqs", path.Base(u))}}
		}
		return []need{{action: action, resource: arn("sqs", field("QueueName"))}}
	case "S3":
		bucket, key := field("Bucket"), field("Key")
		switch c.Operation {
		case "ListObjectsV2", "ListObjects":
			return []need{{action: "s3:ListBucket", resource: "arn:aws:s3:::" + bucket}}
		case "HeadObject":
			return []need{{action: "s3:GetObject", resource: "arn:aws:s3:::" + bucket + "/" + key}}
		}
		return []need{{action: "s3:" + c.Operation, resource: "arn:aws:s3:::" + bucket + "/" + key}}
	}
	t.Fatalf("%s: no rule for what %s %s needs: add it", c.Function, c.Service, c.Operation)
	return nil
}

// keys is an item's partition key value (jobs' pk, deliveries'
// delivery_id), as dynamodb:LeadingKeys sees it.
func keys(item map[string]ddbtypes.AttributeValue) []string {
	for _, k := range []string{"pk", "delivery_id"} {
		if s, ok := item[k].(*ddbtypes.AttributeValueMemberS); ok {
			return []string{s.Value}
		}
	}
	return nil
}

// allowedBy is the index of the first statement allowing n, -1 if none.
func allowedBy(sts []map[string]any, n need) int {
	for i, st := range sts {
		// Actions are case-insensitive.
		if st["Effect"] != "Allow" || !slices.ContainsFunc(list(st["Action"]), func(a string) bool { return wildcard(strings.ToLower(a), strings.ToLower(n.action)) }) {
			continue
		}
		resources := list(st["Resource"])
		ok := matchAny(resources, n.resource)
		for _, r := range n.anyOf {
			ok = ok || matchAny(resources, r)
		}
		if ok && conditionHolds(st["Condition"], n) {
			return i
		}
	}
	return -1
}

// conditionHolds evaluates a statement's condition for n: none holds;
// ForAllValues:StringLike on dynamodb:LeadingKeys holds when every key of
// the request matches one of its patterns (a request with no key, such as
// a Query, does not); any other condition does not hold (this test
// cannot tell).
func conditionHolds(cond any, n need) bool {
	if cond == nil {
		return true
	}
	m, _ := cond.(map[string]any)
	for op, v := range m {
		kv, _ := v.(map[string]any)
		for key, pats := range kv {
			if op != "ForAllValues:StringLike" || key != "dynamodb:LeadingKeys" || len(n.leadingKeys) == 0 {
				return false
			}
			for _, k := range n.leadingKeys {
				if !matchAny(list(pats), k) {
					return false
				}
			}
		}
	}
	return true
}

// list is a statement's string or list of strings.
func list(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		sort.Strings(out)
		return out
	}
	return nil
}

// matchAny reports whether s matches one of IAM's patterns: * any run of
// characters, ? one.
func matchAny(patterns []string, s string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return wildcard(p, s) })
}

func wildcard(p, s string) bool {
	if p == "" {
		return s == ""
	}
	switch p[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if wildcard(p[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && wildcard(p[1:], s[1:])
	}
	return s != "" && p[0] == s[0] && wildcard(p[1:], s[1:])
}
