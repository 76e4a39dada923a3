package notify

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
)

// Which channels a deployment gets: none unless the status is on; a
// GitHub App's check run, a token's commit status, GitLab's status with
// its token, Gerrit's message once its server is set (R-CHANNEL-10).
// Rules: R-CHANNEL-10.
func TestCodeHost_ChannelPerSourceAndCredential(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	key := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
	for _, tt := range []struct {
		name string
		set  func(*config.Config)
		want []string
	}{
		{"off", func(c *config.Config) { c.Notify.CodeHost.Status = false; c.GitHub.Token = "t" }, nil},
		{"github token", func(c *config.Config) { c.GitHub.Token = "t" }, []string{"github-status"}},
		{"github app", func(c *config.Config) { c.GitHub.App = config.GitHubApp{ID: "1", PrivateKey: key} }, []string{"github-check"}},
		{"no credentials", func(*config.Config) {}, nil},
		{"gitlab and gerrit", func(c *config.Config) {
			c.GitLab.Token, c.Gerrit.APIURL = "glpat", "https://review.example.com"
		}, []string{"gitlab-status", "gerrit-message"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.FromEnv(func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			c.Notify.CodeHost.Status = true
			tt.set(&c)
			chans, err := CodeHost(c, time.Now, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ch := range chans {
				got = append(got, ch.Name())
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("channels %q; want %q", got, tt.want)
			}
		})
	}
}
