package prom

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
)

// BasicAuthSecret is the value of the Authorization header basic auth sends
// for user and password (after "Basic "): as secret as the password.
func BasicAuthSecret(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// minSecret is the shortest secret scrubbed: shorter ones would garble the
// text.
const minSecret = 4

// NewScrubber returns a function that replaces every secret with xxxxx, in
// the forms an error text may hold it: as is, URL-escaped, JSON-escaped,
// with runs of white space made one space (as an error quotes a body), and
// cut short where a quoted body was cut ("..."). nil when there is none.
// The plugin and the CLI scrub what they return or print with it: an error
// page may echo the request's headers.
func NewScrubber(secrets []string) func(string) string {
	seen := map[string]bool{}
	var forms []string
	for _, s := range secrets {
		j, _ := json.Marshal(s)
		for _, f := range []string{s, url.PathEscape(s), url.QueryEscape(s), strings.Trim(string(j), `"`), strings.Join(strings.Fields(s), " ")} {
			if len(f) >= minSecret && !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	if len(forms) == 0 {
		return nil
	}
	// Longest first: a secret that holds another is replaced whole.
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, "xxxxx")
	}
	replacer := strings.NewReplacer(pairs...)
	return func(text string) string {
		text = replacer.Replace(text)
		// A secret cut short where a quoted body was cut: its start, up to
		// the "..." that marks the cut.
		for from := 0; ; {
			i := strings.Index(text[from:], "...")
			if i < 0 {
				return text
			}
			i += from
			before := text[:i]
			for _, f := range forms {
				for k := len(f) - 1; k >= minSecret; k-- {
					if strings.HasSuffix(before, f[:k]) {
						before = before[:len(before)-k] + "xxxxx"
						break
					}
				}
			}
			text = before + text[i:]
			from = len(before) + len("...")
		}
	}
}
