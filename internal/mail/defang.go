package mail

import (
	"net/url"
	"regexp"
	"strings"
)

// What a model wrote about an untrusted diff is data (R-MAIL-2): in the
// email it never becomes a working link. A URL in it is defanged
// ("hxxps://evil[.]example/x"), so neither the HTML (which never makes it
// an anchor anyway) nor a mail client's autolinking of the text part can
// turn it into one, unless it points at the changelist's own host. Bare
// domains of the common web top-level domains are defanged too, since
// clients autolink them; a file name ("store.go", "config.yaml") is left
// alone.
var (
	urlPattern  = regexp.MustCompile(`(?i)\b(?:[a-z][a-z0-9+.-]{1,15}://|www\.)[^\s<>"'` + "`" + `]+`)
	barePattern = regexp.MustCompile(`(?i)\b(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:com|net|org|io|dev|app|ai|co|me|ly|gg|sh|xyz|ru|cn|info|biz|top|site|online|link|click|club|us|uk|de|fr|tk|zip|mov)\b(?:/[^\s<>"']*)?`)
)

// defang makes URLs and web domains in s unclickable, keeping those on
// allowedHost (the changelist's host) as they are.
func defang(s, allowedHost string) string {
	s = urlPattern.ReplaceAllStringFunc(s, func(m string) string {
		if allowedHost != "" && hostOf(m) == allowedHost {
			return m
		}
		scheme, rest, ok := strings.Cut(m, "://")
		if !ok {
			return dots(m)
		}
		switch strings.ToLower(scheme) {
		case "http":
			scheme = "hxxp"
		case "https":
			scheme = "hxxps"
		}
		return scheme + "[:]//" + dots(rest)
	})
	return barePattern.ReplaceAllStringFunc(s, func(m string) string {
		if allowedHost != "" && strings.EqualFold(strings.SplitN(m, "/", 2)[0], allowedHost) {
			return m
		}
		return dots(m)
	})
}

// dots breaks a host's dots: "evil.example/x.sh" -> "evil[.]example/x[.]sh".
func dots(s string) string { return strings.ReplaceAll(s, ".", "[.]") }

func hostOf(raw string) string {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// changelistHost is the host of the changelist's URL: links there are the
// review tool's own.
func changelistHost(changelistURL string) string {
	u, err := url.Parse(changelistURL)
	if err != nil || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Hostname())
}
