package cfn_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/deploy/cfn"
	"github.com/criticizer/criticizer/internal/inbound"
)

// Replies in both renderings: without an inbound domain there is no
// receipt rule set (and no SES statement in the bucket's policy); with
// one, a rule set and its rule for every recipient of the domain, spam
// and virus scanned, storing the raw reply under inbound/ (which
// expires) and notifying the encrypted inbound topic, which delivers raw
// to the reply queue. SES may put objects there, publish to the topic
// and use the topics' key only for this account's receipt rule; only
// the topic may send to the reply queue. template.yaml keeps the rule
// set and the bucket statement under HasInboundDomain.
// Rules: R-REPLY-1.
func TestInbound_ReceiptRuleOnlyWithADomain_Confined(t *testing.T) {
	if deploy.InboundPrefix != inbound.ObjectPrefix {
		t.Fatalf("the bucket's prefix %q is not the one the reply function reads, %q", deploy.InboundPrefix, inbound.ObjectPrefix)
	}
	rule := "arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:receipt-rule-set/${AWS::StackName}-inbound:receipt-rule/${AWS::StackName}-replies"
	off := resources(rendered(t, nil))
	for _, id := range []string{deploy.IDReceiptRuleSet, deploy.IDReceiptRule} {
		if off[id] != nil {
			t.Errorf("without an inbound domain the CDK rendering has %s", id)
		}
	}
	if b, _ := json.Marshal(off[deploy.IDPayloadBucket+"Policy"]); strings.Contains(string(b), "ses.amazonaws.com") {
		t.Error("without an inbound domain SES may put objects in the bucket")
	}
	if off[deploy.IDInboundTopic] == nil || off[deploy.FunctionID(deploy.FnReply)] == nil {
		t.Error("the topic and the reply function exist either way")
	}

	on := resources(rendered(t, map[string]string{"InboundDomain": "replies.example.org"}))
	if got := text(get(on[deploy.IDReceiptRuleSet], "Properties", "RuleSetName")); got != "${AWS::StackName}-inbound" {
		t.Errorf("rule set name %q", got)
	}
	r := get(on[deploy.IDReceiptRule], "Properties", "Rule")
	action := get(r, "Actions").([]any)[0]
	if list(get(r, "Recipients"))[0] != "replies.example.org" || get(r, "ScanEnabled") != true || get(r, "Enabled") != true ||
		text(get(action, "S3Action", "BucketName")) != "${"+deploy.IDPayloadBucket+"}" || get(action, "S3Action", "ObjectKeyPrefix") != "inbound/" ||
		text(get(action, "S3Action", "TopicArn")) != "${"+deploy.IDInboundTopic+"}" || text(get(on[deploy.IDReceiptRule], "Properties", "RuleSetName")) != "${"+deploy.IDReceiptRuleSet+"}" {
		t.Errorf("receipt rule %v", r)
	}
	stmts := func(id string, path ...string) []any {
		return get(on[id], append([]string{"Properties"}, path...)...).([]any)
	}
	find := func(sts []any, sid string) any {
		for _, st := range sts {
			if get(st, "Sid") == sid {
				return st
			}
		}
		t.Fatalf("no statement %s", sid)
		return nil
	}
	put := find(stmts(deploy.IDPayloadBucket+"Policy", "PolicyDocument", "Statement"), "SesStoresRepliesForThisAccountsReceiptRule")
	if get(put, "Principal", "Service") != "ses.amazonaws.com" || get(put, "Action") != "s3:PutObject" ||
		text(get(put, "Resource")) != "${PayloadBucket.Arn}/inbound/*" || text(get(put, "Condition", "ArnLike", "AWS:SourceArn")) != rule ||
		text(get(put, "Condition", "StringEquals", "AWS:SourceAccount")) != "${AWS::AccountId}" {
		t.Errorf("bucket statement %v", put)
	}
	pub := find(stmts(deploy.IDInboundTopic+"Policy", "PolicyDocument", "Statement"), "SesPublishesThisAccountsReceiptRule")
	if get(pub, "Action") != "sns:Publish" || text(get(pub, "Condition", "ArnLike", "AWS:SourceArn")) != rule {
		t.Errorf("topic statement %v", pub)
	}
	key := find(stmts(deploy.IDTopicKey, "KeyPolicy", "Statement"), "SesNotifiesThisAccountsReceiptRule")
	if text(get(key, "Condition", "ArnLike", "aws:SourceArn")) != rule {
		t.Errorf("key statement %v", key)
	}
	sub := on[deploy.IDInboundTopic+"Subscription"]
	if get(sub, "Properties", "RawMessageDelivery") != true || text(get(sub, "Properties", "Endpoint")) != "${"+deploy.QueueID(deploy.QReply)+".Arn}" {
		t.Errorf("subscription %v", sub)
	}
	q := stmts(deploy.QueueID(deploy.QReply)+"Policy", "PolicyDocument", "Statement")
	if b, _ := json.Marshal(q); !strings.Contains(string(b), `"aws:SourceArn":{"Ref":"InboundTopic"}`) {
		t.Errorf("reply queue policy %s: want the inbound topic only", b)
	}
	expires := false
	for _, rl := range get(on[deploy.IDPayloadBucket], "Properties", "LifecycleConfiguration", "Rules").([]any) {
		expires = expires || get(rl, "Prefix") == "inbound/" && get(rl, "ExpirationInDays") == float64(deploy.InboundExpiryDays)
	}
	if !expires {
		t.Error("replies under inbound/ never expire")
	}

	sam, err := cfn.SAM(deploy.Describe())
	if err != nil {
		t.Fatal(err)
	}
	res := resources(sam.Value())
	for _, id := range []string{deploy.IDReceiptRuleSet, deploy.IDReceiptRule} {
		if res[id]["Condition"] != "HasInboundDomain" {
			t.Errorf("template.yaml's %s is not under HasInboundDomain", id)
		}
	}
	if b, _ := json.Marshal(res[deploy.IDPayloadBucket+"Policy"]); !strings.Contains(string(b), `"Fn::If":["HasInboundDomain"`) {
		t.Error("template.yaml's bucket statement for SES is not under HasInboundDomain")
	}
}
