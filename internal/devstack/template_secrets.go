package devstack

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/criticizer/criticizer/internal/deploy/cfn"
)

// SecretValue is the value CloudFormation would store in secret id (an
// AWS::SecretsManager::Secret) when it creates it: its SecretString, or
// what its GenerateSecretString makes (SecretStringTemplate with
// GenerateStringKey set to a random password of PasswordLength,
// default 32, without punctuation when ExcludePunctuation).
func (t *Template) SecretValue(id string, s StackValues) (string, error) {
	if n := t.Property(id, "SecretString"); n != nil {
		return t.Eval(n, s)
	}
	g := t.Property(id, "GenerateSecretString")
	if g == nil {
		return "", fmt.Errorf("secret %s: neither SecretString nor GenerateSecretString", id)
	}
	str := func(key, def string) string {
		if v := cfn.YAMLPath(g, key); v != nil {
			return v.Value
		}
		return def
	}
	length, err := strconv.Atoi(str("PasswordLength", "32"))
	if err != nil || length < 1 {
		return "", fmt.Errorf("secret %s: PasswordLength %q", id, str("PasswordLength", ""))
	}
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	if str("ExcludePunctuation", "false") != "true" {
		alphabet += "!#$%&()*+,-.:;<=>?@[]^_{|}~"
	}
	for _, c := range str("ExcludeCharacters", "") {
		alphabet = strings.ReplaceAll(alphabet, string(c), "")
	}
	password := make([]byte, length)
	for i := range password {
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", err
		}
		password[i] = alphabet[k.Int64()]
	}
	key := str("GenerateStringKey", "")
	if key == "" {
		return string(password), nil
	}
	obj := map[string]any{}
	if err := json.Unmarshal([]byte(str("SecretStringTemplate", "{}")), &obj); err != nil {
		return "", fmt.Errorf("secret %s: SecretStringTemplate: %w", id, err)
	}
	obj[key] = string(password)
	b, err := json.Marshal(obj)
	return string(b), err
}
