// Package redacttest is the corpus of planted secrets and addresses the
// redaction tests of every package share: realistic values of every kind
// the redactor must remove, in the shapes they take in error messages,
// headers, URLs, JSON and stack traces, and the literals that must not
// survive.
package redacttest

import "strings"

// Literals planted by the tests. Each is a realistic secret of its kind;
// none may survive redaction.
const (
	PlantAWSKeyID    = "AKIAIOSFODNN7EXAMPLE"
	plantAWSTempID   = "ASIAY34FZKBOKMUTVV7A"
	plantAWSSecret   = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	PlantBearer      = "mF_9.B5f-4.1JqM"
	plantBasic       = "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
	PlantToken       = "tok_5ecr3tV4lue"
	PlantAPIKey      = "ak_live_7f3c2b1a9e"
	plantAPIKeyBare  = "bareapikey12345"
	PlantPassword    = "hunter2-correct-horse"
	plantSecret      = "s3cr3t-value-xyz"
	plantHubSig      = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	plantOpenAI      = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
	PlantGHP         = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	plantGHO         = "gho_16C7e42F292c6912E7710c838347Ae178B4a"
	plantGHPAT       = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
	plantSlack       = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	plantJWT         = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	plantPEMBody     = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
	plantURLPass     = "pa55w0rd-in-url"
	plantURLUser     = "deploy-bot"
	plantQueryToken  = "qtok-998877"
	plantQuerySig    = "qsig-ABCDEF0123"
	PlantEmail       = "Alice.Reviewer@Example.com"
	plantEmail2      = "bob+ci@corp.example.org"
	plantJSONPass    = "spaced pass phrase"
	plantEscapedPass = "escaped-pa55"
	plantCookie      = "session=abcdef123456"
	plantSessionTok  = "FwoGZXIvYXdzEJr//////////wEaDOnSessionTokenValue"
)

// plantedBase holds every kind of secret R-PRIVACY-1 forbids, in the
// shapes they take in error messages, headers, URLs, JSON and stack traces.
func plantedBase() []string {
	return []string{
		"aws_access_key_id=" + PlantAWSKeyID,
		"temporary id " + plantAWSTempID,
		"aws_secret_access_key = " + plantAWSSecret,
		`{"SecretAccessKey":"` + plantAWSSecret + `","SessionToken":"` + plantSessionTok + `"}`,
		"Authorization: Bearer " + PlantBearer,
		"proxy-authorization: Basic " + plantBasic,
		"sent header bearer " + PlantBearer,
		"GET /x?a=1&token=" + PlantToken,
		"api_key=" + PlantAPIKey,
		"x-apikey: " + plantAPIKeyBare,
		"password=" + PlantPassword,
		"client_secret=" + plantSecret,
		"X-Hub-Signature-256: sha256=" + plantHubSig,
		"computed sha256=" + plantHubSig,
		"llm key " + plantOpenAI,
		"git token " + PlantGHP + " oauth " + plantGHO + " pat " + plantGHPAT,
		"slack " + plantSlack,
		"jwt " + plantJWT,
		"-----BEGIN RSA PRIVATE KEY-----\n" + plantPEMBody + "\n-----END RSA PRIVATE KEY-----",
		"clone https://" + plantURLUser + ":" + plantURLPass + "@git.example.com/org/repo.git",
		"callback https://hooks.example.com/x?id=7&access_token=" + plantQueryToken + "&sig=" + plantQuerySig,
		"recipient " + PlantEmail + " cc <" + plantEmail2 + ">.",
		`{"password": "` + plantJSONPass + `"}`,
		`body: "{\"password\":\"` + plantEscapedPass + `\"}"`,
		"Cookie: " + plantCookie,
	}
}

var baseLiterals = []string{
	PlantAWSKeyID, plantAWSTempID, plantAWSSecret, PlantBearer, plantBasic, PlantToken,
	PlantAPIKey, plantAPIKeyBare, PlantPassword, plantSecret, plantHubSig, plantOpenAI,
	PlantGHP, plantGHO, plantGHPAT, plantSlack, plantJWT, plantPEMBody, plantURLPass,
	plantURLUser, plantQueryToken, plantQuerySig, PlantEmail, strings.ToLower(PlantEmail),
	plantEmail2, plantJSONPass, "spaced", plantEscapedPass, plantCookie, plantSessionTok,
	// Parts that would still identify the secret.
	"hunter2", "IOSFODNN7", "bPxRfiCYEXAMPLEKEY", "Alice.Reviewer", "bob+ci",
}

// Adversarial values: the token formats of each integrated system, the
// address forms intake accepts, and secrets in URLs.
const (
	plantBareAWSSecret = "Zx8/Qw3+Er7TyUi9OpAs2DfGh5JkLz1XcVb4NmQw"
	plantBareSession   = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD7tMXzXNzPmuZ0sdFAKEsessionTOKENvalueQmZkXyZ0bWFkZUp2YWx1ZQ"
	plantGLPAT         = "glpat-AbCdEfGhIjKlMnOpQrSt"
	plantGLDeploy      = "gldt-9xYzAbCdEfGhIjKlMnOpQr"
	plantWhsec         = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	plantWebhookSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	plantAuthParam     = "authvalue-77aa"
	plantPathSecret    = "T00000000B00000000XXXXXXXXXXXXXX24"
	plantStripe        = "sk_live_51HxY2aBcDeFgHiJkLmNoP"
	plantStripeWh      = "whsec_abc123DEF456ghi789"
	plantGoogle        = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
	plantGitLabToken   = "x-gitlab-secret-token-42"
	plantUnicodeEmail  = "josé.müller@bücher.example"
	plantIDNEmail      = "ann@例え.テスト"
	plantFullWidth     = "carol＠example.org"
	plantPercent       = "dave%40example.net"
	plantIPLiteral     = "erin@[192.0.2.7]"
	plantQuoted        = `"frank smith"@example.com`
	plantDiffURL       = "https://diffs.example.com/pr/7.diff?X-Amz-Signature=presigned0123&X-Amz-Credential=AKIDcred"
)

func adversarial() []string {
	return []string{
		"aws secret " + plantBareAWSSecret + " used",
		"session " + plantBareSession,
		"gitlab " + plantGLPAT + " deploy " + plantGLDeploy,
		"signing secret " + plantWhsec,
		"webhook-signature: " + plantWebhookSig,
		"signature header " + plantWebhookSig,
		"GET https://ci.example.com/hook?auth=" + plantAuthParam,
		"post https://hooks.slack.com/services/" + plantPathSecret,
		"stripe " + plantStripe + " endpoint secret " + plantStripeWh,
		"maps key " + plantGoogle,
		"X-Gitlab-Token: " + plantGitLabToken,
		"to " + plantUnicodeEmail + ", " + plantIDNEmail + "; " + plantFullWidth + " " + plantPercent,
		"literal " + plantIPLiteral + " quoted " + plantQuoted,
		`Get "` + plantDiffURL + `": dial tcp: i/o timeout`,
	}
}

var adversarialLiterals = []string{
	plantBareAWSSecret, plantBareSession, "FAKEsessionTOKEN", plantGLPAT, plantGLDeploy, plantWhsec,
	plantWebhookSig, "g0hM9SsE", plantAuthParam, plantPathSecret, plantStripe, plantStripeWh,
	plantGoogle, plantGitLabToken, plantUnicodeEmail, "josé.müller", plantIDNEmail, plantFullWidth,
	"carol", plantPercent, "dave%40", plantIPLiteral, "erin@", plantQuoted, "frank smith",
	"presigned0123", "AKIDcred",
}

// Planted returns text holding every planted secret and address.
func Planted() string { return strings.Join(Items(), "\n") }

// Items returns the planted text's items one by one, each whole (a PEM
// block keeps its lines together): a fuzz target that redacts one item in
// each input's context tries far more contexts than one that redacts the
// whole corpus every time.
func Items() []string { return append(plantedBase(), adversarial()...) }

// Literals returns the planted literals: none may survive redaction.
func Literals() []string {
	return append(append([]string(nil), baseLiterals...), adversarialLiterals...)
}
