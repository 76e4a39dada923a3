package sesmail

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/criticizer/criticizer/internal/config"
)

// checkHeaders refuses headers SES v2 would refuse the whole send for
// (R-LIMIT-2): more than config.MaxSESHeaders of them, a name that is not
// 1 to 126 printable ASCII characters without a colon, a value that is
// not 1 to 870 printable ASCII characters, or a name given twice (SES
// allows most of these headers once).
func checkHeaders(hs []types.MessageHeader) error {
	if len(hs) > config.MaxSESHeaders {
		return fmt.Errorf("%d headers, over SES's %d", len(hs), config.MaxSESHeaders)
	}
	seen := make(map[string]bool, len(hs))
	for _, h := range hs {
		name, value := aws.ToString(h.Name), aws.ToString(h.Value)
		if name == "" || len(name) > config.MaxSESHeaderName {
			return fmt.Errorf("header name of %d characters: SES takes 1 to %d", len(name), config.MaxSESHeaderName)
		}
		for i := 0; i < len(name); i++ {
			if c := name[i]; c <= ' ' || c >= 0x7f || c == ':' {
				return fmt.Errorf("header name %q has a byte 0x%02x SES does not take", name, c)
			}
		}
		if value == "" || len(value) > config.MaxSESHeaderValue {
			return fmt.Errorf("header %s: a value of %d characters: SES takes 1 to %d", name, len(value), config.MaxSESHeaderValue)
		}
		for i := 0; i < len(value); i++ {
			if c := value[i]; c < ' ' || c >= 0x7f {
				return fmt.Errorf("header %s: byte %d is 0x%02x, not printable ASCII", name, i, c)
			}
		}
		k := strings.ToLower(name)
		if seen[k] {
			return fmt.Errorf("header %s given twice", name)
		}
		seen[k] = true
	}
	return nil
}
