package inbound

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// MaxRawBytes bounds what is read of a reply: its commands are a few
// lines above the quoted email, and a reply is refused whole beyond this
// (R-REPLY-6), whatever it attaches.
const MaxRawBytes = 256 << 10

// The MIME tree of a reply is walked at most this deep and this wide: a
// mail client's reply is two or three levels (mixed, alternative, the
// texts); anything beyond is not a reply worth reading.
const (
	maxDepth = 6
	maxParts = 32
)

// ErrNoText is a reply with no text/plain or text/html part to read.
var ErrNoText = errors.New("reply has no text part")

// Text is the text of a reply message (its header already read): the
// first text/plain part that is not an attachment, or, for a message
// that has only HTML, a text rendering of the first text/html part
// (htmlText), decoded from its transfer encoding and charset. MIME is
// read with the standard library (net/mail, mime, mime/multipart,
// mime/quotedprintable); HTML with golang.org/x/net/html, the Go team's
// HTML5 parser, because a mail client's HTML is not well-formed enough
// for anything less.
func Text(h mail.Header, body io.Reader) (string, error) {
	w := walker{}
	if err := w.walk(h, body, 0); err != nil {
		return "", err
	}
	switch {
	case w.plain != nil:
		return *w.plain, nil
	case w.html != nil:
		return htmlText(*w.html), nil
	}
	return "", ErrNoText
}

// header is a message's or a part's header (mail.Header,
// textproto.MIMEHeader).
type header interface{ Get(string) string }

type walker struct {
	plain, html *string
	parts       int
}

// walk reads one entity: a multipart's parts in turn, or a text body.
func (w *walker) walk(h header, body io.Reader, depth int) error {
	w.parts++
	if depth > maxDepth || w.parts > maxParts {
		return nil
	}
	ct := h.Get("Content-Type")
	if ct == "" {
		ct = "text/plain; charset=us-ascii" // RFC 2045 §5.2
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, params = "text/plain", map[string]string{}
	}
	if disp, _, _ := mime.ParseMediaType(h.Get("Content-Disposition")); disp == "attachment" {
		return nil
	}
	switch {
	case strings.HasPrefix(mt, "multipart/"):
		if params["boundary"] == "" {
			return nil
		}
		mr := multipart.NewReader(body, params["boundary"])
		for w.plain == nil {
			p, err := mr.NextRawPart()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return nil // a broken part ends the walk; what was found stands
			}
			if err := w.walk(p.Header, p, depth+1); err != nil {
				return err
			}
		}
		return nil
	case mt == "text/plain" && w.plain == nil:
		s, err := decode(h, params, body)
		if err != nil {
			return err
		}
		w.plain = &s
	case mt == "text/html" && w.html == nil:
		s, err := decode(h, params, body)
		if err != nil {
			return err
		}
		w.html = &s
	case mt == "message/rfc822":
		// A forwarded message is not the reply's own text.
	}
	return nil
}

// decode undoes a part's transfer encoding and charset.
func decode(h header, params map[string]string, body io.Reader) (string, error) {
	var r io.Reader = body
	switch strings.ToLower(strings.TrimSpace(h.Get("Content-Transfer-Encoding"))) {
	case "quoted-printable":
		r = quotedprintable.NewReader(body)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, body) // it skips the line breaks
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxRawBytes+1))
	if err != nil && len(b) == 0 {
		return "", fmt.Errorf("reply text: %w", err)
	}
	return toUTF8(b, params["charset"]), nil
}

// toUTF8 reads b in charset. The commands are ASCII, so charsets only
// have to keep ASCII readable: UTF-8 and US-ASCII are taken as they are,
// ISO-8859-1 and Windows-1252 (what Outlook still sends) byte for rune,
// anything else as UTF-8 with what does not decode replaced.
func toUTF8(b []byte, charset string) string {
	switch strings.ToLower(charset) {
	case "iso-8859-1", "latin1", "windows-1252", "cp1252":
		r := make([]rune, len(b))
		for i, c := range b {
			r[i] = rune(c)
		}
		return string(r)
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// htmlText renders an HTML reply as text: block elements end lines,
// <br> breaks one, and what is quoted is left out — a <blockquote>
// (Apple Mail, Thunderbird, most clients), Gmail's div.gmail_quote and
// its attribution, and everything from Outlook's divRplyFwdMsg or
// appendonsend marker on (the quoted email follows them). Scripts,
// styles and the head are not text.
func htmlText(s string) string {
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		return ""
	}
	var b strings.Builder
	stop := false
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if stop {
			return
		}
		switch n.Type {
		case html.TextNode:
			b.WriteString(strings.Join(strings.Fields(n.Data), " "))
			if strings.HasSuffix(n.Data, " ") {
				b.WriteByte(' ')
			}
			return
		case html.ElementNode:
			switch n.DataAtom {
			case atom.Head, atom.Script, atom.Style, atom.Title, atom.Blockquote:
				return
			case atom.Br:
				b.WriteByte('\n')
				return
			case atom.Hr:
				b.WriteString("\n________________________________\n")
				return
			}
			id, class := attr(n, "id"), attr(n, "class")
			if id == "divRplyFwdMsg" || id == "appendonsend" || strings.HasPrefix(id, "x_divRplyFwdMsg") {
				stop = true
				return
			}
			if strings.Contains(" "+class+" ", " gmail_quote ") || strings.Contains(class, "gmail_quote_container") ||
				strings.Contains(" "+class+" ", " gmail_attr ") || strings.Contains(class, "moz-cite-prefix") {
				return
			}
		}
		block := n.Type == html.ElementNode && blockElement(n.DataAtom)
		if block {
			b.WriteByte('\n')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		if block {
			b.WriteByte('\n')
		}
	}
	walk(doc)
	return b.String()
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func blockElement(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Div, atom.Li, atom.Tr, atom.Table, atom.Ul, atom.Ol, atom.H1, atom.H2, atom.H3, atom.H4, atom.Pre, atom.Section, atom.Article:
		return true
	}
	return false
}

// ReadMessage reads a raw reply: its header, and its text (Text). raw is
// at most MaxRawBytes (the caller refused a longer one).
func ReadMessage(raw []byte) (mail.Header, string, error) {
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return nil, "", fmt.Errorf("reply message: %w", err)
	}
	text, err := Text(m.Header, m.Body)
	return m.Header, text, err
}
